/* The watched product's form (automation/setup/forms.py): the product and ad group pickers,
   and the variant checkboxes. Plain JavaScript; everything from an answer goes in through
   textContent or an input's value, never as HTML. The words come from the page (data-*). */
(function () {
  "use strict";

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text) { node.textContent = text; }
    return node;
  }

  function checkbox(name, value, checked) {
    var input = document.createElement("input");
    input.type = "checkbox"; input.name = name; input.value = value; input.checked = checked;
    return input;
  }

  /* --- the variant checkboxes ------------------------------------------------------------ */

  function setUpVariants(box) {
    var all = box.querySelector(".variant-all input");
    box.addEventListener("change", function (event) {
      var target = event.target;
      if (target === all && all.checked) {
        box.querySelectorAll(".variant-list input").forEach(function (input) { input.checked = false; });
      } else if (target !== all && target.checked) {
        all.checked = false;
      } else if (target !== all && !box.querySelector(".variant-list input:checked")) {
        all.checked = true;
      }
    });
  }

  function showVariants(box, variants) {
    var list = box.querySelector(".variant-list"), hint = box.querySelector(".variant-hint");
    list.textContent = ""; hint.textContent = "";
    box.querySelector(".variant-all input").checked = true;
    variants.forEach(function (variant) {
      var li = element("li"), label = element("label");
      label.appendChild(checkbox(box.dataset.name, variant.value, false));
      label.appendChild(document.createTextNode(" "));
      label.appendChild(element("span", "", variant.label));
      if (variant.detail) {
        label.appendChild(document.createTextNode(" "));
        label.appendChild(element("small", "", variant.detail));
      }
      li.appendChild(label); list.appendChild(li);
    });
  }

  /* --- the ad groups --------------------------------------------------------------------- */

  function refKey(value) {
    /* A chosen ad group's checkbox value: "customer_id=…&ad_group_id=…&…", or "customer:id". */
    if (value.indexOf("=") < 0) { return value; }
    var ref = new URLSearchParams(value);
    return ref.get("customer_id") + ":" + ref.get("ad_group_id");
  }

  function addAdGroup(picker, item) {
    var list = document.getElementById(picker.dataset.list), ref = item.ref || {};
    var value = new URLSearchParams(ref).toString(), found = null;
    list.querySelectorAll("input[type=checkbox]").forEach(function (input) {
      if (refKey(input.value) === refKey(value)) { found = input; }
    });
    if (found) { found.checked = true; return; }
    var li = element("li"), label = element("label");
    label.appendChild(checkbox(picker.dataset.name, value, true));
    label.appendChild(document.createTextNode(" "));
    label.appendChild(element("span", "", item.label));
    label.appendChild(document.createTextNode(" "));
    label.appendChild(element("small", "", item.detail));
    li.appendChild(label); list.appendChild(li);
  }

  /* --- the search boxes ------------------------------------------------------------------ */

  function setUpPicker(box) {
    var search = box.querySelector(".setup-picker-search");
    var list = box.querySelector(".setup-picker-results");
    var hint = box.querySelector(".setup-picker-hint");
    var timer = null, asked = 0;

    function set(name, value, onlyEmpty) {
      var input = document.getElementById(box.dataset.prefix + name);
      if (input && (!onlyEmpty || !input.value)) { input.value = value; }
    }

    function choose(item) {
      if (box.dataset.kind === "ad-groups") {
        addAdGroup(box, item);
      } else {
        document.getElementById(box.dataset.target).value = item.value;
        Object.keys(item.fill || {}).forEach(function (k) { set(k, item.fill[k], false); });
        Object.keys(item.fill_empty || {}).forEach(function (k) { set(k, item.fill_empty[k], true); });
        var variants = document.getElementById(box.dataset.variants);
        if (variants) { variants.dataset.product = item.value; showVariants(variants, item.variants || []); }
      }
      list.textContent = ""; search.value = "";
      hint.textContent = box.dataset.chosen + " " + item.label + " (" + item.detail + ")";
    }

    function result(item) {
      var li = element("li"), button = element("button", "setup-picker-choice");
      button.type = "button";
      button.appendChild(element("span", "setup-picker-label", item.label));
      button.appendChild(element("small", "", item.detail));
      if (item.variants && item.variants.length) {
        var variants = element("ul", "setup-picker-variants");
        item.variants.forEach(function (variant) {
          var line = element("li", "", variant.label);
          if (variant.detail) { line.appendChild(element("small", "", variant.detail)); }
          variants.appendChild(line);
        });
        button.appendChild(variants);
      }
      button.addEventListener("click", function () { choose(item); });
      li.appendChild(button);
      return li;
    }

    function show(data, mine) {
      if (mine !== asked) { return; }
      list.textContent = ""; hint.textContent = data.hint || "";
      data.results.forEach(function (item) { list.appendChild(result(item)); });
    }

    search.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); } });
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var mine = ++asked;
        fetch(box.dataset.url + "?q=" + encodeURIComponent(search.value.trim()),
              {credentials: "same-origin", headers: {"Accept": "application/json"}})
          .then(function (r) { return r.json(); })
          .then(function (data) { show(data, mine); })
          .catch(function () { if (mine === asked) { hint.textContent = box.dataset.failed; } });
      }, 250);
    });

    /* A product id typed by hand: the variants shown are another product's. */
    var target = box.dataset.target && document.getElementById(box.dataset.target);
    var variants = box.dataset.variants && document.getElementById(box.dataset.variants);
    if (target && variants) {
      variants.dataset.product = target.value;
      target.addEventListener("input", function () {
        if (target.value.trim() === variants.dataset.product) { return; }
        variants.dataset.product = target.value.trim();
        showVariants(variants, []);
        variants.querySelector(".variant-hint").textContent = variants.dataset.retyped;
      });
    }
  }

  function all() {
    document.querySelectorAll(".variant-choice").forEach(setUpVariants);
    document.querySelectorAll(".setup-picker").forEach(setUpPicker);
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", all); } else { all(); }
})();
