"""What `/analytics` shows, made from one `analytics.selectors` answer: headline figures, charts
(`analytics.charts`), breakdowns, queues and rate limits, each linking to the trace feed filtered
to the traces behind it (the filters of the page, the interval's or the range's time window, and
the group's value)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus, urlencode

from django.urls import reverse
from django.utils.safestring import SafeString

from config.money import cost_text, usd

from . import charts

TIME_PARAMS = ("time_range", "since", "until", "interval", "tz")
PALETTE = 6  # series-c0 … series-c5 in app.css
FAILED = "error,rate_limited"


def compact(value: float) -> str:
    value = float(value)
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:.3g}M"
    if abs(value) >= 10_000:
        return f"{value / 1000:.3g}k"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.3g}"


def money_tick(value: float) -> str:
    """An axis label: the ticks are round amounts, so whole dollars drop their cents ("$20", "$0.005")."""
    return usd(value).removesuffix(".00")


def duration(ms: float | None) -> str:
    if ms is None:
        return "–"
    if ms >= 1000:
        return f"{ms / 1000:.3g} s"
    return f"{ms:.0f} ms"


def percent(fraction: float) -> str:
    if fraction == 0:
        return "0%"
    return f"{fraction * 100:.2g}%" if fraction < 0.1 else f"{fraction * 100:.0f}%"


def _parse(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC)


class Links:
    """Trace feed URLs: the page's filters, a time window, and a group's value. (A 7-day page
    links ~900 bars: the filters are encoded once, each link appends its own few parameters.)"""

    def __init__(self, filters: dict[str, list[str]]) -> None:
        self.base = {k: v for k, v in filters.items() if k not in TIME_PARAMS}
        self.feed = reverse("trace-feed")
        encoded = urlencode(self.base, doseq=True)
        self.prefix = f"{self.feed}?{encoded}&" if encoded else f"{self.feed}?"

    def to(self, since: str, until: str, **extra: str) -> str:
        if any(name in self.base for name in extra):  # the link narrows one of the page's filters
            params = dict(self.base)
            for name, value in extra.items():
                params[name] = [*params.get("tag", []), value] if name == "tag" else [value]
            params["since"], params["until"] = [since], [until]
            return f"{self.feed}?{urlencode(params, doseq=True)}"
        tail = "".join(f"{name}={_quote(value)}&" for name, value in extra.items())
        return f"{self.prefix}{tail}since={_quote(since)}&until={_quote(until)}"


# (urlencode's quoting, kept: a page's links share a few dozen interval bounds and statuses.)
_quote = functools.lru_cache(maxsize=4096)(quote_plus)


def context(body: dict[str, Any], filters: dict[str, list[str]], *, groups: dict[str, Any]) -> dict[str, Any]:
    links = Links(filters)
    rng = body["range"]
    series = body["series"]
    bounds = [p["t"] for p in series] + [rng["until"]]
    interval = rng["interval"]
    labels = [_column_label(bounds[i], bounds[i + 1], interval) for i in range(len(series))]
    hrefs = [links.to(bounds[i], bounds[i + 1]) for i in range(len(series))]
    x_labels = [(i, _tick(bounds[i], interval, rng)) for i in charts.x_label_positions(len(series))]
    totals = body["totals"]

    def columns(make: Any) -> list[charts.Column]:
        return [
            charts.Column(labels[i], hrefs[i], **make(i, point, bounds[i], bounds[i + 1]))
            for i, point in enumerate(series)
        ]

    def seg(value: float, css: str, href: str, title: str) -> charts.Segment:
        return charts.Segment(value, css, href, title)

    volume = columns(
        lambda i, p, a, b: {
            "segments": [
                seg(p["success"], "series-success", links.to(a, b, status="success"), f"{p['success']:,} successful"),
                seg(p["errors"], "series-error", links.to(a, b, status="error"), f"{p['errors']:,} failed"),
                seg(
                    p["rate_limited"],
                    "series-limited",
                    links.to(a, b, status="rate_limited"),
                    f"{p['rate_limited']:,} rate limited",
                ),
            ]
        }
    )
    cost = columns(lambda i, p, a, b: {"segments": [seg(p["cost"], "series-cost", hrefs[i], _cost_title(p))]})
    tokens = columns(
        lambda i, p, a, b: {
            "segments": [
                seg(p["prompt_tokens"], "series-prompt", hrefs[i], f"{p['prompt_tokens']:,} prompt tokens"),
                seg(
                    p["completion_tokens"],
                    "series-completion",
                    hrefs[i],
                    f"{p['completion_tokens']:,} completion tokens",
                ),
            ]
        }
    )
    latency = columns(lambda i, p, a, b: {"points": [p["p50"], p["p95"]]})
    errors = columns(
        lambda i, p, a, b: {
            "segments": [
                seg(
                    p["error_rate"],
                    "series-error",
                    links.to(a, b, status=FAILED),
                    f"{percent(p['error_rate'])} failed or rate limited of {p['count']:,}",
                )
            ]
        }
    )
    bars = charts.stacked_bars
    chart_list = [
        _chart(
            "volume",
            "Calls",
            "Throughput per interval, by outcome",
            bars(volume, label="Calls per interval", fmt=compact, x_labels=x_labels, whole=True),
            [("series-success", "Success"), ("series-error", "Failed"), ("series-limited", "Rate limited")],
        ),
        _chart(
            "cost",
            "Cost",
            "Priced calls only (USD)",
            bars(cost, label="Cost per interval", fmt=money_tick, x_labels=x_labels),
            [("series-cost", "Cost")],
        ),
        _chart(
            "tokens",
            "Tokens",
            "Prompt and completion",
            bars(tokens, label="Tokens per interval", fmt=compact, x_labels=x_labels, whole=True),
            [("series-prompt", "Prompt"), ("series-completion", "Completion")],
        ),
        _chart(
            "latency",
            "Latency",
            "p50 and p95 per interval",
            charts.lines(
                latency,
                [charts.Line("p50", "series-p50"), charts.Line("p95", "series-p95")],
                label="Latency per interval",
                fmt=duration,
                x_labels=x_labels,
            ),
            [("series-p50", "p50"), ("series-p95", "p95")],
        ),
        _chart(
            "errors",
            "Error rate",
            "Failed and rate-limited share of calls",
            bars(errors, label="Error rate per interval", fmt=percent, x_labels=x_labels),
            [("series-error", "Failed or rate limited")],
        ),
    ]
    rate_chart = _rate_limit_chart(body["rate_limits"]["series"], bounds, labels, hrefs, links, x_labels)
    if rate_chart is not None:
        chart_list.append(rate_chart)
    if body.get("score"):
        chart_list.insert(0, _score_chart(body["score"], labels, hrefs, x_labels))

    whole = (rng["since"], rng["until"])
    return {
        "range": rng,
        "range_text": _range_text(rng),
        "source": body["source"],
        "totals": totals,
        "kpis": _kpis(body, links.to(*whole), links.to(*whole, status=FAILED), len(series), interval),
        "charts": chart_list,
        "breakdowns": [
            _breakdown(group_by, title, groups[group_by], totals, links, whole)
            for group_by, title in (("model", "Models"), ("provider", "Providers"), ("tag", "Tags"))
        ],
        "queue": body["queue"],
        "rate_limit_latest": [
            {**r, "at_text": _parse(r["at"]).strftime("%b %-d, %H:%M UTC")} for r in body["rate_limits"]["latest"]
        ],
        "has_traces": totals["count"] > 0,
    }


def _chart(slug: str, title: str, sub: str, svg: SafeString, legend: list[tuple[str, str]]) -> dict[str, Any]:
    return {"slug": slug, "title": title, "sub": sub, "svg": svg, "legend": legend}


def score_text(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 1000 else compact(value)


def _score_chart(
    score: dict[str, Any], labels: list[str], hrefs: list[str], x_labels: Sequence[tuple[int, str]]
) -> dict[str, Any]:
    """ "Score: <name>": the score's average per interval (its `series`, the same intervals as the
    others'), each column linking to the interval's traces."""
    cols = [charts.Column(labels[i], hrefs[i], points=[p["avg"]]) for i, p in enumerate(score["series"][: len(labels)])]
    svg = charts.lines(
        cols, [charts.Line("average", "series-p50")], label=f"Average {score['name']} per interval",
        fmt=score_text, x_labels=x_labels,
    )  # fmt: skip
    count = score["count"]
    sub = (
        f"Average per interval of {count:,} score{'s' if count != 1 else ''} (overall {score_text(score['avg'])}); "
        "a boolean counts 1 or 0"
        if count
        else "No scores of this name on the traces in this range"
    )
    return _chart("score", f"Score: {score['name']}", sub, svg, [("series-p50", "Average")])


def _cost_title(point: dict[str, Any]) -> str:
    return cost_text(point["cost"], count=point["count"], unpriced=point["unpriced"])


def _rate_limit_chart(
    points: list[dict[str, Any]],
    bounds: list[str],
    labels: list[str],
    hrefs: list[str],
    links: Links,
    x_labels: Sequence[tuple[int, str]],
) -> dict[str, Any] | None:
    if not points:
        return None
    providers = sorted({p["provider"] for p in points})
    css = {name: f"series-c{i % PALETTE}" for i, name in enumerate(providers)}
    by_t: dict[str, dict[str, int]] = {}
    for p in points:
        by_t.setdefault(p["t"], {})[p["provider"]] = p["rate_limited"]
    cols = []
    for i in range(len(labels)):
        a, b = bounds[i], bounds[i + 1]
        counts = by_t.get(a, {})
        segments = [
            charts.Segment(counts[name], css[name], links.to(a, b, provider=name, status="rate_limited"),
                           f"{counts[name]:,} rate limited by {name or 'unknown provider'}")
            for name in providers
            if counts.get(name)
        ]  # fmt: skip
        cols.append(charts.Column(labels[i], links.to(a, b, status="rate_limited"), segments))
    svg = charts.stacked_bars(cols, label="Rate-limited calls per interval", fmt=compact, x_labels=x_labels, whole=True)
    legend = [(css[name], name or "unknown") for name in providers]
    return _chart("rate-limits", "Rate-limited calls", "Per provider (HTTP 429 from upstreams)", svg, legend)


def _kpis(body: dict[str, Any], all_href: str, failed_href: str, points: int, interval: str) -> list[dict[str, Any]]:
    t, lat, ttft = body["totals"], body["latency_ms"], body["ttft_ms"]
    per = t["count"] / points if points else 0
    return [
        {"label": "Calls", "value": f"{t['count']:,}", "sub": f"≈ {compact(per)} per {interval}", "href": all_href},
        {
            "label": "Error rate",
            "value": percent(t["error_rate"]),
            "sub": f"{t['errors']:,} failed · {t['rate_limited']:,} rate limited",
            "href": failed_href,
            "tone": "danger" if t["error_rate"] >= 0.05 else "",
        },
        {
            "label": "Cost",
            # Nothing priced: "3 unpriced", never "$0"; under a partial sum, what it leaves out.
            "value": f"{t['unpriced']:,} unpriced" if 0 < t["count"] <= t["unpriced"] else usd(t["cost"]),
            "sub": _unpriced_words(t) if t["unpriced"] else "every call priced",
            "tone": "warning" if t["unpriced"] else "",
        },
        {
            "label": "Tokens",
            "value": compact(t["total_tokens"]),
            "sub": f"{compact(t['prompt_tokens'])} prompt · {compact(t['completion_tokens'])} completion",
        },
        {"label": "Latency p50", "value": duration(lat["p50"]),
         "sub": f"p95 {duration(lat['p95'])} · p99 {duration(lat['p99'])}"},
        {"label": "Time to first token", "value": duration(ttft["p50"]),
         "sub": f"p50 · p95 {duration(ttft['p95'])} (streamed)" if ttft["p50"] is not None else "no streamed calls"},
    ]  # fmt: skip


def _group_cost(r: dict[str, Any]) -> str:
    """A breakdown row's cost in its narrow cell: "3 unpriced" when nothing is priced, a partial sum
    with "+1 unpriced" on a second line (the row's calls are beside it)."""
    if 0 < r["unpriced"] < r["count"]:
        return f"{usd(r['cost'])}\n+{r['unpriced']:,} unpriced"
    return cost_text(r["cost"], count=r["count"], unpriced=r["unpriced"])


def _unpriced_words(t: dict[str, Any]) -> str:
    if t["unpriced"] >= t["count"]:
        return "no call has a known price"
    return f"{t['unpriced']:,} of {t['count']:,} calls unpriced, not in the sum"


def _breakdown(
    group_by: str,
    title: str,
    rows: list[dict[str, Any]] | str,
    totals: dict[str, Any],
    links: Links,
    whole: tuple[str, str],
) -> dict[str, Any]:
    if isinstance(rows, str):
        return {"group_by": group_by, "title": title, "error": rows, "rows": []}
    most_calls = max((r["count"] for r in rows), default=0) or 1
    most_cost = max((r["cost"] for r in rows), default=0) or 1
    out = []
    for r in rows:
        key = r["key"]
        out.append(
            {
                "key": key if key not in ("", None) else "",
                "href": links.to(*whole, **{group_by: key}) if key not in ("", None) else "",
                "count": r["count"],
                "share": r["count"] / totals["count"] if totals["count"] else 0,
                "calls_width": round(r["count"] / most_calls * 100, 1),
                "cost": r["cost"],
                "cost_text": _group_cost(r),
                "cost_width": round(r["cost"] / most_cost * 100, 1) if r["cost"] else 0,
                "unpriced": r["unpriced"],
                "error_rate": percent(r["error_rate"]),
                "failing": r["error_rate"] >= 0.05,
                "p95": duration(r["latency_ms"]["p95"]),
            }
        )
    return {"group_by": group_by, "title": title, "error": "", "rows": out}


def _column_label(a: str, b: str, interval: str) -> str:
    start = _parse(a)
    if interval == "minute":
        return start.strftime("%b %-d, %H:%M UTC")
    if interval == "hour":
        return f"{start.strftime('%b %-d, %H:%M')}–{_parse(b).strftime('%H:%M')} UTC"
    return start.strftime("%a %b %-d")


def _tick(a: str, interval: str, rng: dict[str, Any]) -> str:
    start = _parse(a)
    span = _parse(rng["until"]) - _parse(rng["since"])
    if interval == "day" or (interval == "hour" and span.days >= 2):
        return start.strftime("%b %-d")
    return start.strftime("%H:%M")


def _range_text(rng: dict[str, Any]) -> str:
    since, until = _parse(rng["since"]), _parse(rng["until"])
    return f"{since.strftime('%b %-d, %H:%M')} – {until.strftime('%b %-d, %H:%M')} UTC, per {rng['interval']}"
