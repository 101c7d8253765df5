"use strict";
// The report's own script: paged, filtered tables drawn from the JSON embedded in the page, copy
// buttons, and heatmap cells that filter the regressions table. No library, no network.
(function () {
  const $ = (selector) => document.querySelector(selector);

  // Fill a clone of a <template> row: [data-field] gets the row's text, [data-href] a link,
  // [data-copy] buttons the command they copy. Empty parts are hidden, table cells stay in place.
  function fill(template, row) {
    const node = template.content.firstElementChild.cloneNode(true);
    node.querySelectorAll("[data-field]").forEach((element) => {
      const value = row[element.dataset.field] || "";
      element.textContent = value ? (element.dataset.prefix || "") + value : "";
      element.dataset.value = value;
      if (!value && element.tagName !== "TD" && element.tagName !== "TH") element.hidden = true;
    });
    node.querySelectorAll("[data-href]").forEach((element) => {
      element.href = row[element.dataset.href] || "";
    });
    node.querySelectorAll("[data-copy]").forEach((button) => {
      const command = row[button.dataset.copy] || "";
      button.dataset.command = command;
      button.title = command;
      button.hidden = !command;
    });
    node.querySelectorAll("details").forEach((details) => {
      details.hidden = !details.querySelector("[data-field]:not([hidden])");
    });
    return node;
  }

  // A table whose rows live in a JSON script element and are drawn PAGE_ROWS at a time.
  class PagedTable {
    constructor(name, searchable, accepts) {
      this.rows = JSON.parse(document.getElementById(name + "-data").textContent);
      this.body = document.getElementById(name + "-body");
      this.template = document.getElementById(name + "-row");
      this.pager = document.querySelector(`[data-pager="${name}"]`);
      this.shown = document.getElementById(name + "-shown");
      this.haystacks = this.rows.map((row) => searchable.map((key) => row[key] || "").join("\n").toLowerCase());
      this.accepts = accepts;
      this.query = "";
      this.page = 0;
      this.update();
    }

    update() {
      const words = this.query.toLowerCase().split(/\s+/).filter(Boolean);
      this.matching = this.rows.filter((row, index) =>
        words.every((word) => this.haystacks[index].includes(word)) && this.accepts(row));
      this.page = 0;
      this.draw();
    }

    draw(all = false) {
      const pages = Math.max(1, Math.ceil(this.matching.length / PAGE_ROWS));
      this.page = Math.min(this.page, pages - 1);
      const start = all ? 0 : this.page * PAGE_ROWS;
      const slice = all ? this.matching : this.matching.slice(start, start + PAGE_ROWS);
      this.body.replaceChildren(...slice.map((row) => fill(this.template, row)));
      this.shown.textContent = `${this.matching.length} of ${this.rows.length} shown`;
      this.shown.dataset.matching = String(this.matching.length);
      this.drawPager(pages, all);
    }

    drawPager(pages, all) {
      const button = (label, page, disabled) => {
        const element = document.createElement("button");
        element.type = "button";
        element.textContent = label;
        element.disabled = disabled;
        element.addEventListener("click", () => { this.page = page; this.draw(); });
        return element;
      };
      const where = document.createElement("span");
      where.textContent = `page ${this.page + 1} of ${pages}`;
      this.pager.replaceChildren(button("« previous", this.page - 1, this.page === 0), where,
                                 button("next »", this.page + 1, this.page >= pages - 1));
      this.pager.hidden = all || pages === 1;
    }
  }

  const filters = Array.from(document.querySelectorAll("select[data-filter]"));
  const findings = new PagedTable("findings",
    ["test", "module", "configuration", "classification", "detail", "culprit", "culprit_inlined", "culprit_passes",
     "culprit_note", "confirmation", "known"],
    (row) => filters.every((select) => {
      const wanted = select.value;
      if (!wanted) return true;
      if (select.dataset.filter === "status" && wanted === "known") return Boolean(row.known);
      return row[select.dataset.filter] === wanted;
    }));
  const modules = new PagedTable("modules", ["module"], () => true);

  $("#search").addEventListener("input", (event) => { findings.query = event.target.value; findings.update(); });
  filters.forEach((select) => select.addEventListener("change", () => findings.update()));
  $("#module-search").addEventListener("input", (event) => { modules.query = event.target.value; modules.update(); });

  // A heatmap cell lists its module's findings.
  document.querySelectorAll("td.heat[data-module]").forEach((cell) => {
    cell.addEventListener("click", () => {
      const select = $('select[data-filter="module"]');
      if (!select || !Array.from(select.options).some((option) => option.value === cell.dataset.module)) return;
      select.value = cell.dataset.module;
      findings.update();
      $("#findings").scrollIntoView();
    });
  });

  // Copy buttons: the clipboard API where the page may use it, a selected textarea otherwise.
  function copyBySelection(text) {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    const copied = document.execCommand("copy");
    area.remove();
    return copied;
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const text = button.dataset.command;
    const done = (copied) => {
      button.dataset.copied = copied ? "yes" : "no";
      button.classList.toggle("copied", copied);
      button.setAttribute("aria-label", copied ? "copied" : "copy failed: select the command by hand");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(() => done(true), () => done(copyBySelection(text)));
    } else {
      done(copyBySelection(text));
    }
  });

  // Printing shows every filtered row, not only the current page.
  window.addEventListener("beforeprint", () => { findings.draw(true); modules.draw(true); });
  window.addEventListener("afterprint", () => { findings.draw(); modules.draw(); });
})();
