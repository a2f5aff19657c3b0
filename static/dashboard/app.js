// tracerelay dashboard: the few things HTML cannot do alone. Loaded on every page, after htmx.
(function () {
  "use strict";

  // <time datetime="…UTC…">: show it in the browser's time zone; UTC stays on hover (title).
  var format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
  });
  // <time data-short> (the feed): today's time with seconds, else the day and the time.
  var formatToday = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  var formatDay = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  function localizeTimes(root) {
    var today = new Date().toDateString();
    root.querySelectorAll("time[datetime]:not([data-local])").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when)) return;
      if (el.hasAttribute("data-short")) {
        el.textContent = (when.toDateString() === today ? formatToday : formatDay).format(when);
      } else {
        el.textContent = format.format(when);
      }
      el.setAttribute("data-local", "");
    });
  }

  // A "+N" chip (the feed) shows its popover of every chip on hover and on focus, under the button;
  // a click pins it open (Escape or a click elsewhere closes it). Without this script the button's
  // popovertarget opens it on a click.
  var pinned = null;
  function popoverOf(button) { return document.getElementById(button.getAttribute("popovertarget")); }
  function showChips(button) {
    var pop = popoverOf(button);
    if (!pop || !pop.showPopover) return;
    if (!pop.matches(":popover-open")) pop.showPopover();
    var box = button.getBoundingClientRect();
    pop.classList.add("is-placed");
    var left = Math.max(8, Math.min(box.left, window.innerWidth - pop.offsetWidth - 8));
    var top = box.bottom + 4;
    if (top + pop.offsetHeight > window.innerHeight - 8) top = Math.max(8, box.top - pop.offsetHeight - 4);
    pop.style.left = left + "px";
    pop.style.top = top + "px";
  }
  function hideChips(button) {
    var pop = popoverOf(button);
    if (pop && pop !== pinned && pop.matches(":popover-open")) pop.hidePopover();
  }
  document.addEventListener("mouseover", function (event) {
    var button = event.target.closest && event.target.closest(".chip-more");
    if (button) showChips(button);
  });
  document.addEventListener("mouseout", function (event) {
    var button = event.target.closest && event.target.closest(".chip-more");
    if (button && !button.contains(event.relatedTarget)) hideChips(button);
  });
  document.addEventListener("focusin", function (event) {
    if (event.target.matches && event.target.matches(".chip-more")) showChips(event.target);
  });
  document.addEventListener("focusout", function (event) {
    if (event.target.matches && event.target.matches(".chip-more")) hideChips(event.target);
  });
  document.addEventListener("toggle", function (event) {
    if (event.target === pinned && event.newState === "closed") pinned = null;
  }, true);

  // <button data-copy="element-id">: copy that element's text, say so on the button.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    var area = document.createElement("textarea");
    area.value = text; area.setAttribute("readonly", ""); area.style.position = "fixed"; area.style.opacity = "0";
    document.body.appendChild(area); area.select();
    try { document.execCommand("copy"); } finally { document.body.removeChild(area); }
    return Promise.resolve();
  }
  document.addEventListener("click", function (event) {
    var more = event.target.closest(".chip-more");
    if (more) {
      event.preventDefault();  // the popover is ours to open: a click pins it, a second one closes it
      var pop = popoverOf(more);
      if (pop && pinned === pop) { pinned = null; pop.hidePopover(); } else if (pop) { showChips(more); pinned = pop; }
      return;
    }
    var button = event.target.closest("[data-copy]");
    if (button) {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source) return;
      var label = button.textContent;
      copyText(source.textContent.trim()).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 1600);
      });
      return;
    }
    var dismiss = event.target.closest("[data-dismiss]");
    if (dismiss) {
      var open = dismiss.closest("details");
      if (open) open.removeAttribute("open");
      return;
    }
    // A click outside an open menu or confirmation closes it.
    document.querySelectorAll("details.menu[open], details.confirm[open]").forEach(function (d) {
      if (!d.contains(event.target)) d.removeAttribute("open");
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll("details.menu[open], details.confirm[open]").forEach(function (d) {
      d.removeAttribute("open");
      var summary = d.querySelector("summary");
      if (summary) summary.focus();
    });
  });

  // A form htmx replaces with the server's answer (say after "Test connection") keeps what was typed
  // in its password fields: the server never sends a secret back, so they would come back empty.
  var typedSecrets = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    typedSecrets = {};
    if (!target || !target.querySelectorAll) return;
    target.querySelectorAll("input[type=password][name]").forEach(function (el) {
      if (el.value) typedSecrets[el.name] = el.value;
    });
  });
  document.addEventListener("htmx:afterSwap", function () {
    if (!typedSecrets) return;
    Object.keys(typedSecrets).forEach(function (name) {
      var el = document.querySelector('input[type=password][name="' + CSS.escape(name) + '"]');
      if (el && !el.value) el.value = typedSecrets[name];
    });
    typedSecrets = null;
  });

  // A table that scrolls sideways in its box (.table-wrap) must be scrollable from the keyboard: one
  // with nothing focusable inside takes the focus itself (the arrow keys then scroll it).
  var FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";
  function focusableTables(root) {
    var wraps = root.matches && root.matches(".table-wrap") ? [root] : [];
    wraps.concat(Array.prototype.slice.call(root.querySelectorAll(".table-wrap"))).forEach(function (wrap) {
      if (!wrap.hasAttribute("tabindex") && !wrap.querySelector(FOCUSABLE)) wrap.setAttribute("tabindex", "0");
    });
  }

  document.addEventListener("DOMContentLoaded", function () { localizeTimes(document); focusableTables(document); });
  document.addEventListener("htmx:load", function (event) { localizeTimes(event.target); focusableTables(event.target); });
})();
