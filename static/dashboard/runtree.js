// tracerelay: a run's tree of spans with its waterfall (the run page, /runs/<run_id>).
//
// The spans come as JSON once ({run_id, columns, spans: [[…], …], totals}: an array per span). The tree is built and
// its totals rolled up per subtree in one pass each; the list is virtual: only the rows on screen
// (and a few around them) exist in the DOM, reused as it scrolls, so 10,000 spans open and scroll
// like 10. Deep subtrees start closed; search by name shows the matches with their ancestors.
// Keyboard: the tree is one tab stop (role=tree, aria-activedescendant); arrows, Home/End,
// PageUp/PageDown, Enter or Space shows the span's input, output and metadata beside the tree.
(function () {
  "use strict";

  var ROW = 32; // px, one row (the CSS says the same: .rt-row height)
  var OVERSCAN = 8; // rows rendered above and below the visible ones
  var OPEN_DEPTH = 2; // levels 0..OPEN_DEPTH-1 start open; deeper subtrees start closed
  var OPEN_MAX_CHILDREN = 200; // a node with more children than this starts closed, whatever its depth
  var INDENT_MAX = 16; // levels indented (by the CSS: --d, the level); deeper ones say their level
  var CALLS = { llm: true, embedding: true };
  var KIND_LABELS = {
    llm: "LLM", embedding: "Embed", agent: "Agent", tool: "Tool", retrieval: "Retrieval", chain: "Chain",
    workflow: "Workflow", guardrail: "Guardrail", event: "Event", other: "Other",
  };

  function usd(value) {
    // config/money.py's usd: cents from a dollar up, four significant digits below.
    if (value === 0) return "$0";
    if (value >= 1) return "$" + value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    var text = value.toPrecision(4);
    if (text.indexOf("e") >= 0) text = value.toFixed(Math.min(20, 3 - Math.floor(Math.log10(value))));
    text = text.replace(/0+$/, "");
    var dot = text.indexOf(".");
    if (dot >= 0 && text.length - dot - 1 < 2) text = text + "0".repeat(2 - (text.length - dot - 1));
    return "$" + text;
  }
  function costText(sub) {
    if (!sub.calls) return "";
    if (sub.unpriced >= sub.calls) return sub.unpriced + " unpriced";
    return usd(sub.cost) + (sub.unpriced ? " (" + sub.unpriced + " of " + sub.calls + " unpriced)" : "");
  }
  // A row's cost cell is narrow: the sum, starred when some calls below have no known price.
  function costCell(sub) {
    if (!sub.calls) return "";
    if (sub.unpriced >= sub.calls) return "unpriced";
    return usd(sub.cost) + (sub.unpriced ? "*" : "");
  }
  function duration(ms) {
    if (ms === null || ms === undefined) return "—";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 10000) return (ms / 1000).toFixed(2) + " s";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    var s = Math.round(ms / 1000);
    return Math.floor(s / 60) + " min " + (s % 60) + " s";
  }
  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // --- the tree ------------------------------------------------------------------------------

  // The answer's spans are arrays in the order of its `columns`: one object per span here.
  // (Objects of one literal shape: V8 keeps 10,000 of them fast, where keys added in a loop are not.)
  function spanObjects(run) {
    var at = {};
    run.columns.forEach(function (name, c) { at[name] = c; });
    var id = at.id, parent = at.parent_id, kind = at.kind, name = at.name, model = at.model, status = at.status,
      start = at.start_ms, latency = at.latency_ms, cost = at.cost, unpriced = at.unpriced,
      prompt = at.prompt_tokens, completion = at.completion_tokens;
    return run.spans.map(function (r) {
      return {
        id: r[id], parent_id: r[parent], kind: r[kind], name: r[name], model: r[model], status: r[status],
        start_ms: r[start], latency_ms: r[latency], cost: r[cost], unpriced: r[unpriced],
        prompt_tokens: r[prompt], completion_tokens: r[completion],
      };
    });
  }

  function build(run) {
    var spans = spanObjects(run);
    var nodes = new Array(spans.length);
    var byId = new Map();
    var i, n, s;
    for (i = 0; i < spans.length; i++) {
      s = spans[i];
      n = {
        i: i, s: s, parent: null, children: [], depth: 0, open: false, seen: false, orphan: false,
        start: s.start_ms, dur: s.latency_ms || 0, failed: s.status !== "success",
        failedBelow: false, match: false, matchBelow: false, label: (s.name || s.model || s.id),
        sub: { spans: 1, calls: 0, cost: 0, unpriced: 0, tokens: 0, errors: 0 },
      };
      n.lower = n.label.toLowerCase() + " " + (s.model || "").toLowerCase();
      nodes[i] = n;
      byId.set(s.id, n);
    }
    var roots = [];
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      var pid = n.s.parent_id;
      var p = pid ? byId.get(pid) : undefined;
      if (p && p !== n) { n.parent = p; p.children.push(n); }
      else { roots.push(n); n.orphan = !!pid; } // a parent that has not arrived (yet): shown at the top
    }
    var order = []; // depth-first, parents before children
    function walk(root) {
      var stack = [root];
      root.depth = root.parent ? root.parent.depth + 1 : 0;
      while (stack.length) {
        var node = stack.pop();
        if (node.seen) continue;
        node.seen = true;
        order.push(node);
        node.children.sort(byStart);
        for (var k = node.children.length - 1; k >= 0; k--) {
          node.children[k].depth = node.depth + 1;
          node.children[k].pos = k + 1;
          stack.push(node.children[k]);
        }
      }
    }
    roots.sort(byStart);
    roots.forEach(function (root, k) { root.pos = k + 1; walk(root); });
    // A loop of parents (a→b→a) reaches no root: cut it at its earliest span, which becomes a root.
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      if (n.seen) continue;
      var siblings = n.parent.children;
      siblings.splice(siblings.indexOf(n), 1);
      n.parent = null; n.orphan = true;
      roots.push(n);
      n.pos = roots.length;
      walk(n);
    }
    // Totals per subtree, children before parents.
    for (i = order.length - 1; i >= 0; i--) {
      n = order[i];
      s = n.s;
      var sub = n.sub;
      // Only calls are priced and counted (a wrapper span's usage repeats its calls': docs/runs.md).
      if (CALLS[s.kind]) {
        sub.calls += 1;
        if (s.unpriced || s.cost === null || s.cost === undefined) sub.unpriced += 1;
        else sub.cost += s.cost;
        sub.tokens += (s.prompt_tokens || 0) + (s.completion_tokens || 0);
      }
      if (n.failed) sub.errors += 1;
      n.end = n.start + n.dur;
      if (n.parent) {
        var ps = n.parent.sub;
        ps.spans += sub.spans; ps.calls += sub.calls; ps.cost += sub.cost; ps.unpriced += sub.unpriced;
        ps.tokens += sub.tokens; ps.errors += sub.errors;
        if (n.failed || n.failedBelow) n.parent.failedBelow = true;
      }
    }
    var t0 = Infinity, t1 = -Infinity;
    for (i = 0; i < nodes.length; i++) {
      if (nodes[i].start < t0) t0 = nodes[i].start;
      if (nodes[i].end > t1) t1 = nodes[i].end;
    }
    for (i = 0; i < order.length; i++) {
      n = order[i];
      n.open = n.children.length > 0 && n.depth < OPEN_DEPTH && n.children.length <= OPEN_MAX_CHILDREN;
    }
    return { nodes: nodes, roots: roots, order: order, byId: byId, t0: t0, span: Math.max(1, t1 - t0) };
  }
  function byStart(a, b) { return a.start - b.start || a.i - b.i; }

  // --- the page ------------------------------------------------------------------------------

  function RunTree(host, run) {
    this.host = host;
    this.tree = build(run);
    performance.mark("run-tree:built");
    this.rows = [];
    this.active = -1; // index into rows
    this.selected = null; // node
    this.query = "";
    this.pool = [];
    this.first = -1;
    this.last = -1;
    this.spanUrl = host.getAttribute("data-span-url");
    this.pageUrl = host.getAttribute("data-page-url");
    this.mount();
    this.flatten();
  }

  RunTree.prototype.mount = function () {
    var self = this;
    var ticks = "";
    for (var t = 0; t <= 2; t++) {
      ticks += '<span class="rt-tick" style="left:' + t * 50 + '%">' + duration((this.tree.span * t) / 2) + "</span>";
    }
    this.host.innerHTML =
      '<div class="rt-head" aria-hidden="true"><span class="rt-name">Span</span><span class="rt-axis">' + ticks +
      '</span><span class="rt-num">Duration</span><span class="rt-num rt-cost">Cost</span><span class="rt-num rt-tok">Tokens</span></div>' +
      '<div class="rt-viewport" tabindex="0" role="tree" aria-label="Spans of the run">' +
      '<div class="rt-spacer"><div class="rt-rows" role="presentation"></div></div></div>';
    this.viewport = this.host.querySelector(".rt-viewport");
    this.spacer = this.host.querySelector(".rt-spacer");
    this.layer = this.host.querySelector(".rt-rows");
    var pending = false;
    this.viewport.addEventListener("scroll", function () {
      if (pending) return;
      pending = true;
      requestAnimationFrame(function () { pending = false; self.paint(); });
    }, { passive: true });
    window.addEventListener("resize", function () { self.paint(true); });
    this.viewport.addEventListener("click", function (event) {
      var row = event.target.closest(".rt-row");
      if (!row) return;
      var index = Number(row.getAttribute("data-row"));
      if (event.target.closest(".rt-toggle")) { self.toggle(self.rows[index]); self.setActive(index); return; }
      self.setActive(index);
      self.select(self.rows[index]);
    });
    this.viewport.addEventListener("keydown", function (event) { self.key(event); });
  };

  // The visible rows: depth-first, through open nodes (or, while searching, through the matches' ancestors).
  RunTree.prototype.flatten = function () {
    var rows = [];
    var searching = this.query !== "";
    var stack = this.tree.roots.slice().reverse();
    while (stack.length) {
      var n = stack.pop();
      if (searching && !n.match && !n.matchBelow) continue;
      rows.push(n);
      var open = searching ? n.matchBelow : n.open;
      if (open) for (var k = n.children.length - 1; k >= 0; k--) stack.push(n.children[k]);
    }
    var activeNode = this.rows[this.active];
    this.rows = rows;
    this.spacer.style.height = rows.length * ROW + "px";
    this.active = activeNode ? rows.indexOf(activeNode) : -1;
    if (this.active < 0 && rows.length) this.active = 0;
    this.paint(true);
  };

  // Each row element sits at its own row's offset and keeps its content while that row stays on
  // screen: a scroll rebuilds only the rows that come into view, a selection or a move of the
  // active row only their classes.
  RunTree.prototype.paint = function (force) {
    var top = this.viewport.scrollTop;
    var height = this.viewport.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    var last = Math.min(this.rows.length, Math.ceil((top + height) / ROW) + OVERSCAN);
    if (!force && first === this.first && last === this.last) return;
    this.first = first; this.last = last;
    var placed = new Map();
    var free = [];
    var p, el;
    for (p = 0; p < this.pool.length; p++) {
      el = this.pool[p];
      if (el._index >= first && el._index < last && el._node === this.rows[el._index] && !placed.has(el._index)) placed.set(el._index, el);
      else free.push(el);
    }
    for (var index = first; index < last; index++) {
      el = placed.get(index);
      if (!el) {
        el = free.pop();
        if (!el) {
          el = document.createElement("div");
          el.setAttribute("role", "treeitem");
          this.layer.appendChild(el);
          this.pool.push(el);
        }
        el._index = index;
        el._node = this.rows[index];
        el.style.transform = "translateY(" + index * ROW + "px)";
        el.hidden = false;
      }
      this.fill(el, this.rows[index], index);
    }
    for (p = 0; p < free.length; p++) {
      el = free[p];
      if (el.hidden) continue;
      el.hidden = true; el._index = -1; el._node = null; el._content = ""; el.removeAttribute("id");
    }
    var active = this.rows[this.active];
    if (active && this.active >= first && this.active < last) this.viewport.setAttribute("aria-activedescendant", "rt-" + active.i);
    else this.viewport.removeAttribute("aria-activedescendant");
  };

  RunTree.prototype.fill = function (el, n, index) {
    var s = n.s;
    var tree = this.tree;
    var left = ((n.start - tree.t0) / tree.span) * 100;
    var width = (n.dur / tree.span) * 100;
    var cls = "rt-row";
    if (n.failed) cls += " is-failed";
    else if (n.failedBelow) cls += " is-failed-path";
    if (n === this.selected) cls += " is-selected";
    if (index === this.active) cls += " is-active";
    if (this.query && n.match) cls += " is-match";
    el.className = cls;
    el.setAttribute("data-row", index);
    el.setAttribute("aria-selected", n === this.selected ? "true" : "false");
    var content = n.i + (n.open ? "o" : "c") + (this.query ? "q" : "");
    if (el._content === content) return;
    el._content = content;
    el.id = "rt-" + n.i;
    el.setAttribute("aria-level", n.depth + 1);
    el.setAttribute("aria-posinset", n.pos);
    el.setAttribute("aria-setsize", n.parent ? n.parent.children.length : tree.roots.length);
    if (n.children.length) el.setAttribute("aria-expanded", this.query ? "true" : n.open ? "true" : "false");
    else el.removeAttribute("aria-expanded");
    var costs = n.children.length || CALLS[s.kind] ? costCell(n.sub) : "";
    var costTitle = n.sub.unpriced ? costText(n.sub) + (n.children.length ? ", this span and below" : "") : n.children.length ? "This span and everything below it" : "";
    // The row's name is its text (axe label-content-name-mismatch: a name that is not what is shown
    // fails whichever columns the width hides); what only the styling shows is in .sr-only words.
    var extra = (!n.failed && n.failedBelow ? ", a span below failed" : "") +
      (n.children.length ? ", " + n.children.length + " children" : "") + (n.orphan ? ", parent not received" : "");
    var toggle = n.children.length
      ? '<span class="rt-toggle" aria-hidden="true" title="' + (n.open ? "Close" : "Open") + '">' + (this.query || n.open ? "▾" : "▸") + "</span>"
      : '<span class="rt-toggle is-leaf" aria-hidden="true"></span>';
    el.innerHTML =
      '<span class="rt-name" style="--d:' + Math.min(n.depth, INDENT_MAX) + '">' + toggle +
      '<span class="kind-badge k-' + escapeHtml(s.kind) + '">' + escapeHtml(KIND_LABELS[s.kind] || s.kind) + "</span> " +
      '<span class="rt-label">' + escapeHtml(n.label) + "</span>" +
      (s.model && s.model !== n.label ? ' <span class="rt-model">' + escapeHtml(s.model) + "</span>" : "") +
      (n.depth > INDENT_MAX ? ' <span class="rt-level" title="Level ' + (n.depth + 1) + '">L' + (n.depth + 1) + "</span>" : "") +
      (n.orphan ? ' <span class="rt-orphan" title="Its parent has not arrived (yet)">no parent</span>' : "") +
      (n.failed ? ' <span class="rt-fail" title="This span failed">failed</span>' : n.failedBelow ? '<span class="rt-fail-below" title="A span below failed"></span>' : "") +
      '</span> <span class="rt-bar-cell"><span class="rt-bar k-' + escapeHtml(s.kind) + '" style="left:' + left.toFixed(3) +
      "%;width:" + Math.max(width, 0.15).toFixed(3) + '%"></span></span> ' +
      '<span class="rt-num">' + duration(s.latency_ms) + "</span> " +
      '<span class="rt-num rt-cost"' + (costTitle ? ' title="' + escapeHtml(costTitle) + '"' : "") + ">" + escapeHtml(costs) + "</span> " +
      '<span class="rt-num rt-tok">' + (n.sub.tokens ? n.sub.tokens.toLocaleString("en-US") + '<span class="sr-only"> tokens</span>' : "") + "</span>" +
      (extra ? '<span class="sr-only">' + escapeHtml(extra) + "</span>" : "");
  };

  RunTree.prototype.toggle = function (n, open) {
    if (!n || !n.children.length || this.query) return;
    n.open = open === undefined ? !n.open : open;
    this.flatten();
  };

  RunTree.prototype.setActive = function (index) {
    if (!this.rows.length) return;
    this.active = Math.max(0, Math.min(this.rows.length - 1, index));
    var top = this.active * ROW;
    var view = this.viewport;
    if (top < view.scrollTop) view.scrollTop = top;
    else if (top + ROW > view.scrollTop + view.clientHeight) view.scrollTop = top + ROW - view.clientHeight;
    this.paint(true);
  };

  RunTree.prototype.reveal = function (n) {
    for (var p = n.parent; p; p = p.parent) p.open = true;
    this.flatten();
    var index = this.rows.indexOf(n);
    if (index >= 0) {
      this.setActive(index);
      var view = this.viewport;
      var top = index * ROW;
      if (top < view.scrollTop || top > view.scrollTop + view.clientHeight - ROW) view.scrollTop = Math.max(0, top - view.clientHeight / 3);
      this.paint(true);
    }
  };

  RunTree.prototype.key = function (event) {
    var n = this.rows[this.active];
    var page = Math.max(1, Math.floor(this.viewport.clientHeight / ROW) - 1);
    switch (event.key) {
      case "ArrowDown": this.setActive(this.active + 1); break;
      case "ArrowUp": this.setActive(this.active - 1); break;
      case "PageDown": this.setActive(this.active + page); break;
      case "PageUp": this.setActive(this.active - page); break;
      case "Home": this.setActive(0); break;
      case "End": this.setActive(this.rows.length - 1); break;
      case "ArrowRight":
        if (!n) break;
        if (n.children.length && !n.open && !this.query) this.toggle(n, true);
        else if (n.children.length) this.setActive(this.active + 1);
        break;
      case "ArrowLeft":
        if (!n) break;
        if (n.children.length && n.open && !this.query) this.toggle(n, false);
        else if (n.parent) this.setActive(this.rows.indexOf(n.parent));
        break;
      case "Enter": case " ": if (n) this.select(n); break;
      default: return;
    }
    event.preventDefault();
  };

  // Show the span beside the tree; the address names it (a link to this view), except for the root
  // the page opens on.
  RunTree.prototype.select = function (n, opening) {
    this.selected = n;
    this.paint(true);
    if (!opening) history.replaceState(null, "", this.pageUrl + "?span=" + encodeURIComponent(n.s.id));
    this.rollup(n);
    var target = document.getElementById("span-detail");
    var detail = this.spanUrl.replace("__SPAN__", encodeURIComponent(n.s.id));
    // This script runs as soon as it loads (async), htmx once the page is parsed (defer): the
    // opening selection may come first and waits for it. Without htmx a chosen span opens as a page.
    var show = function () {
      if (window.htmx) window.htmx.ajax("GET", detail, { target: target, swap: "innerHTML" });
      else if (!opening) window.location.assign(detail);
    };
    if (!window.htmx && document.readyState === "loading") document.addEventListener("DOMContentLoaded", show);
    else show();
  };

  RunTree.prototype.rollup = function (n) {
    var box = document.getElementById("span-rollup");
    if (!box) return;
    if (!n.children.length) { box.innerHTML = ""; return; }
    var sub = n.sub;
    box.innerHTML =
      '<p class="card-body span-rollup-text"><strong>With everything below it:</strong> ' + sub.spans.toLocaleString("en-US") +
      " spans · " + sub.calls.toLocaleString("en-US") + " LLM call" + (sub.calls === 1 ? "" : "s") +
      (sub.calls ? " · " + escapeHtml(costText(sub)) : "") + " · " + sub.tokens.toLocaleString("en-US") + " tokens" +
      (sub.errors ? ' · <span class="badge badge-danger">' + sub.errors + " failed</span>" : "") + "</p>";
  };

  RunTree.prototype.search = function (query) {
    this.query = query.trim().toLowerCase();
    var count = 0;
    var order = this.tree.order;
    var i, n;
    for (i = 0; i < order.length; i++) { order[i].match = false; order[i].matchBelow = false; }
    if (this.query) {
      for (i = order.length - 1; i >= 0; i--) {
        n = order[i];
        n.match = n.lower.indexOf(this.query) >= 0;
        if (n.match) count++;
        if (n.parent && (n.match || n.matchBelow)) n.parent.matchBelow = true;
      }
    }
    this.viewport.scrollTop = 0;
    this.active = -1;
    this.flatten();
    if (this.query) {
      var firstMatch = this.rows.findIndex(function (r) { return r.match; });
      if (firstMatch >= 0) this.setActive(firstMatch);
    }
    return count;
  };

  RunTree.prototype.nextMatch = function () {
    for (var k = 1; k <= this.rows.length; k++) {
      var index = (this.active + k) % this.rows.length;
      if (this.rows[index].match) { this.setActive(index); this.select(this.rows[index]); return; }
    }
  };

  RunTree.prototype.nextFailure = function () {
    var order = this.tree.order;
    var start = this.selected ? order.indexOf(this.selected) : -1;
    for (var k = 1; k <= order.length; k++) {
      var n = order[(start + k) % order.length];
      if (n.failed) { this.reveal(n); this.select(n); this.viewport.focus(); return; }
    }
  };

  RunTree.prototype.expandAll = function (open) {
    var order = this.tree.order;
    for (var i = 0; i < order.length; i++) order[i].open = open && order[i].children.length > 0;
    this.flatten();
  };

  function start(host) {
    var status = document.getElementById("run-tree-status");
    performance.mark("run-tree:fetch");
    // The page preloads the same URL (same mode and credentials), so this takes that response.
    fetch(host.getAttribute("data-spans-url"), { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("the spans did not load (HTTP " + response.status + ")");
        return response.json();
      })
      .then(function (run) {
        performance.mark("run-tree:loaded");
        var tree = new RunTree(host, run);
        wire(tree);
        var selected = host.getAttribute("data-selected");
        var chosen = selected && tree.tree.byId.get(selected);
        if (chosen) { tree.reveal(chosen); tree.selected = chosen; tree.rollup(chosen); tree.paint(true); }
        else if (tree.rows.length) tree.select(tree.rows[0], true);
        performance.mark("run-tree:interactive");
        host.setAttribute("data-ready", "");
        window.runTree = tree;
      })
      .catch(function (error) {
        if (status) { status.textContent = "The tree could not be shown: " + error.message + ". Reload the page to try again."; }
        host.setAttribute("data-failed", "");
      });
  }

  function wire(tree) {
    var tools = document.getElementById("run-tools");
    if (!tools) return;
    tools.hidden = false;
    var input = document.getElementById("run-search");
    var count = document.getElementById("run-search-count");
    var timer = null;
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var found = tree.search(input.value);
        count.textContent = input.value.trim() ? found.toLocaleString("en-US") + " match" + (found === 1 ? "" : "es") : "";
      }, 120);
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { event.preventDefault(); clearTimeout(timer); if (tree.query !== input.value.trim().toLowerCase()) tree.search(input.value); tree.nextMatch(); }
      else if (event.key === "Escape" && input.value) { input.value = ""; tree.search(""); count.textContent = ""; }
      else if (event.key === "ArrowDown") { event.preventDefault(); tree.viewport.focus(); }
    });
    tools.addEventListener("click", function (event) {
      var button = event.target.closest("[data-tree]");
      if (!button) return;
      var action = button.getAttribute("data-tree");
      if (action === "expand") tree.expandAll(true);
      else if (action === "collapse") tree.expandAll(false);
      else if (action === "failure") tree.nextFailure();
    });
  }

  function boot() {
    var host = document.getElementById("run-tree");
    if (host) start(host);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
