// The routing pages. The rule form (templates/routing/rule_form.html): add and remove builder and
// destination rows, and offer only the operators that fit a row's field. Without JavaScript the form
// still works: as opened it has one empty row of each, and the server checks every operator.
// The rule list (templates/routing/rules.html): drag a rule by its handle to another place (native
// HTML5 drag and drop). The drop posts the place to the rule's move form, the one the up/down
// buttons post (same endpoint, service and version check); the buttons stay for the keyboard.
// The sampling policy (templates/routing/sampling.html): an example's "Use" fills the first empty
// policy row with its condition and rate (nothing is saved until "Save policy").
(function () {
  "use strict";

  function fitRow(row) {
    var field = row.querySelector("[data-cond-field]");
    var op = row.querySelector("[data-cond-op]");
    if (!field || !op) return;
    var chosen = field.options[field.selectedIndex];
    var kind = chosen ? chosen.getAttribute("data-kind") || "" : "";
    row.setAttribute("data-kind", kind);
    var firstFit = null;
    Array.prototype.forEach.call(op.options, function (option) {
      var fits = !kind || (" " + option.getAttribute("data-kinds") + " ").indexOf(" " + kind + " ") >= 0;
      option.hidden = !fits;
      option.disabled = !fits;
      if (fits && firstFit === null) firstFit = option;
    });
    if (op.selectedOptions.length && op.selectedOptions[0].disabled && firstFit) op.value = firstFit.value;
  }

  function nextIndex(container, kind) {
    var most = -1;
    container.querySelectorAll("[name^='" + kind + "-']").forEach(function (el) {
      var n = parseInt(el.name.split("-")[1], 10);
      if (!isNaN(n) && n > most) most = n;
    });
    return most + 1;
  }

  function addRow(kind) {
    var container = document.querySelector("[data-rows='" + kind + "']");
    var template = document.getElementById(kind + "-row-template");
    if (!container || !template) return null;
    var html = template.innerHTML.replace(/__i__/g, String(nextIndex(container, kind)));
    var holder = document.createElement("div");
    holder.innerHTML = html.trim();
    var row = holder.firstElementChild;
    container.appendChild(row);
    fitRow(row);
    var first = row.querySelector("select, input");
    if (first) first.focus();
    return row;
  }

  document.addEventListener("click", function (event) {
    var add = event.target.closest("[data-add-row]");
    if (add) { addRow(add.getAttribute("data-add-row")); return; }
    var remove = event.target.closest("[data-remove-row]");
    if (remove) {
      var row = remove.closest("[data-row]");
      var container = row && row.parentElement;
      if (!row || !container) return;
      var kind = container.getAttribute("data-rows");
      row.remove();
      if (!container.querySelector("[data-row]")) addRow(kind);
      else {
        var button = document.querySelector("[data-add-row='" + kind + "']");
        if (button) button.focus();
      }
    }
  });
  document.addEventListener("change", function (event) {
    if (event.target.matches("[data-cond-field]")) fitRow(event.target.closest("[data-row]"));
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".cond-row").forEach(fitRow);
  });
  document.addEventListener("htmx:load", function (event) {
    event.target.querySelectorAll(".cond-row").forEach(fitRow);
  });

  // --- Drag and drop in the rule list -----------------------------------------------------------
  document.documentElement.classList.add("js-drag");
  var dragged = null;

  function rulesIn(list) {
    return Array.prototype.filter.call(list.children, function (li) { return li.matches("li.rule"); });
  }
  function unmark() {
    document.querySelectorAll(".drop-before, .drop-after").forEach(function (li) {
      li.classList.remove("drop-before", "drop-after");
    });
  }
  function finish() {
    if (dragged) dragged.classList.remove("is-dragging");
    unmark();
    dragged = null;
  }
  // The rule under the pointer, and whether the dragged one goes before it (upper half) or after.
  function spotOf(event) {
    if (!dragged || !event.target.closest) return null;
    var rule = event.target.closest("li.rule");
    if (!rule || rule.parentElement !== dragged.parentElement) return null;
    var box = rule.getBoundingClientRect();
    return { rule: rule, before: event.clientY < box.top + box.height / 2 };
  }

  document.addEventListener("dragstart", function (event) {
    var handle = event.target.closest && event.target.closest("[data-drag-handle]");
    var rule = handle && handle.closest("[data-sortable] > li.rule");
    if (!rule) return;
    dragged = rule;
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", rule.querySelector(".rule-name").textContent);
    var box = rule.getBoundingClientRect();
    event.dataTransfer.setDragImage(rule, event.clientX - box.left, event.clientY - box.top);
    rule.classList.add("is-dragging");
  });
  document.addEventListener("dragover", function (event) {
    var spot = spotOf(event);
    if (!spot) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "move";
    unmark();
    if (spot.rule !== dragged) spot.rule.classList.add(spot.before ? "drop-before" : "drop-after");
  });
  document.addEventListener("drop", function (event) {
    var spot = spotOf(event);
    if (!spot) return;
    event.preventDefault();
    var rule = dragged;
    var list = rule.parentElement;
    var from = rulesIn(list).indexOf(rule);
    var others = rulesIn(list).filter(function (li) { return li !== rule; });
    var to = spot.rule === rule ? from : others.indexOf(spot.rule) + (spot.before ? 0 : 1);
    finish();
    var form = document.getElementById(rule.id + "-move");
    if (to === from || !form) return;
    list.insertBefore(rule, others[to] || null); // at once; the server's list replaces it
    var place = document.createElement("input");
    place.type = "hidden";
    place.name = "position";
    place.value = String(to + 1);
    form.appendChild(place);
    form.requestSubmit(); // htmx posts it (and swaps in the list); without htmx, a plain POST
    setTimeout(function () { place.remove(); }, 0);
  });
  document.addEventListener("dragend", finish);

  document.addEventListener("click", function (event) {
    var use = event.target.closest("[data-example-condition]");
    if (!use) return;
    var conditions = Array.prototype.slice.call(document.querySelectorAll("input[name$='-condition']"));
    var empty = conditions.filter(function (input) { return !input.value.trim(); })[0];
    if (!empty) return;
    empty.value = use.getAttribute("data-example-condition");
    var rate = document.getElementById(empty.id.replace(/-condition$/, "-sample_rate"));
    if (rate) { rate.value = use.getAttribute("data-example-rate"); rate.focus(); rate.select(); }
  });
})();
