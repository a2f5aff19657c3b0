"""analytics.charts: axis tops, stacked bars and lines as SVG with a link per bar and per column."""

from __future__ import annotations

import re

import pytest

from analytics import charts


@pytest.mark.parametrize(
    ("value", "top"),
    [(0, 1), (-3, 1), (float("nan"), 1), (0.7, 1), (1, 1), (1.2, 2), (2.2, 2.5), (3, 5), (7, 10), (0.031, 0.05),
     (12_345, 20_000), (1e9, 1e9)],
)  # fmt: skip
def test_nice_top(value, top):
    assert charts.nice_top(value) == pytest.approx(top)


def test_counts_get_whole_ticks():
    assert charts.axis([1], whole=True).ticks == [2, 1, 0]
    assert charts.axis([0.4]).ticks == [0.5, 0.25, 0]


def _bars(columns, **kwargs):
    return str(charts.stacked_bars(columns, label="Calls", fmt=str, x_labels=[(0, "12:00")], **kwargs))


def test_stacked_bars_link_every_segment_and_every_column():
    columns = [
        charts.Column("12:00", "/traces?since=a&until=b", [
            charts.Segment(3, "series-success", "/traces?status=success&x=<1>", "3 ok"),
            charts.Segment(1, "series-error", "/traces?status=error", "1 failed"),
        ]),
        charts.Column("13:00", "/traces?since=b&until=c", [charts.Segment(0, "series-success", "/never", "0 ok")]),
    ]  # fmt: skip
    svg = _bars(columns)
    assert svg.count('class="hit"') == 2  # a column with nothing stacked still links to its interval
    assert 'href="/traces?since=b&amp;until=c"' in svg
    assert "/never" not in svg  # an empty segment draws nothing
    assert 'href="/traces?status=success&amp;x=&lt;1&gt;"' in svg  # escaped
    assert "<title>12:00: 1 failed</title>" in svg
    # the axis top is 5 (4 stacked), the bar of 3 is 60 units high, from 40 to 100
    heights = [float(h) for h in re.findall(r'class="bar series-success".*?height="([\d.]+)"', svg)]
    assert heights == [60.0]
    assert 'viewBox="0 0 20 100"' in svg


def test_a_sliver_stays_visible():
    columns = [charts.Column("a", "/a", [charts.Segment(1000, "s", "/big", "big")]),
               charts.Column("b", "/b", [charts.Segment(0.001, "s", "/small", "small")])]  # fmt: skip
    heights = [float(h) for h in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="8" height="([\d.]+)"', _bars(columns))]
    assert heights == [100.0, 0.6]


def test_lines_break_at_missing_values_and_show_a_lone_point():
    columns = [charts.Column(str(i), f"/t{i}", points=[p, None]) for i, p in enumerate([100, 200, None, 50, None])]
    svg = str(charts.lines(columns, [charts.Line("p50", "series-p50"), charts.Line("p95", "series-p95")],
                           label="Latency", fmt=lambda v: f"{v:g} ms", x_labels=[]))  # fmt: skip
    (d,) = re.findall(r'class="line series-p50" d="([^"]+)"', svg)
    assert d == "M5 50L15 0 M32 75H38"  # top 200: 100 → y 50, 200 → y 0; the lone 50 at x 35 → y 75
    assert 'class="line series-p95"' not in svg  # no values: no line
    assert svg.count('class="hit"') == 5
    assert "<title>1: p50 200 ms · p95 –</title>" in svg


def test_x_label_positions():
    assert charts.x_label_positions(0) == []
    assert charts.x_label_positions(3) == [0, 1, 2]
    assert charts.x_label_positions(24) == [0, 5, 10, 15, 20]


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"model": ["gpt 4&o/é"]},
        {"status": ["error"], "tag": ["a b", "c+d"]},
        {"provider": ["x"], "time_range": ["7d"]},
    ],
)
def test_feed_links_are_the_filters_plus_window_and_group(filters):
    """`page.Links.to` (the filters encoded once) gives what urlencode of the whole set gives."""
    from urllib.parse import urlencode

    from analytics.page import TIME_PARAMS, Links

    links = Links(filters)
    base = {k: v for k, v in filters.items() if k not in TIME_PARAMS}
    for extra in ({}, {"status": "success"}, {"tag": "t&1"}, {"model": "m=1"}):
        params = dict(base)
        for name, value in extra.items():
            params[name] = [*params.get("tag", []), value] if name == "tag" else [value]
        params["since"], params["until"] = ["2026-11-20T00:00:00Z"], ["2026-11-21T00:00:00Z"]
        want = "/traces?" + urlencode(params, doseq=True)
        assert links.to("2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z", **extra) == want
