// The rule form (templates/routing/rule_form.html): add and remove builder and destination rows,
// and offer only the operators that fit a row's field. Without JavaScript the form still works:
// it always has one empty row of each, and the server checks every operator.
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
})();
