// What tests/e2e/test_page_integrity.py looks for in a page (run by page.evaluate).
({
  // The blocks of a document (a live one, or a server's answer parsed by
  // DOMParser): the children of <main>, every [data-block] part, headings
  // outside those, counts by queue and state, queue rows, tables, navigation
  // and forms. Job and event rows come and go with traffic: not blocks.
  blocks(doc) {
    const main = doc.querySelector("main");
    if (!main) return ["no <main>"];
    const keys = new Set();
    const inRow = (el) => el.closest("tr[data-job-id], tr[data-event-id], tbody.live-chunk");
    const firstWord = (el) => {
      const own = Array.from(el.childNodes).filter((n) => n.nodeType === Node.TEXT_NODE);
      return own.map((n) => n.textContent).join(" ").trim().split(/\s+/)[0] || "";
    };
    for (const el of main.children) {
      const name = el.dataset.block || (el.id ? "#" + el.id : el.tagName.toLowerCase() + "." + el.classList[0]);
      keys.add("main > " + name);
    }
    for (const el of main.querySelectorAll("[data-block]")) keys.add("block " + el.dataset.block);
    for (const el of main.querySelectorAll("h1, h2, h3")) {
      if (!el.closest("[data-block]") && !inRow(el)) keys.add(el.tagName.toLowerCase() + " " + firstWord(el));
    }
    for (const el of main.querySelectorAll("[data-count-state]")) {
      const holder = el.closest("[data-queue]");
      keys.add("count " + (holder ? holder.dataset.queue : "") + " " + el.dataset.countState);
    }
    for (const el of main.querySelectorAll("tr[data-queue]")) keys.add("queue row " + el.dataset.queue);
    for (const el of main.querySelectorAll("table, nav, form")) {
      if (inRow(el)) continue;
      const name = el.id || el.getAttribute("aria-label") || el.getAttribute("action") || el.className;
      keys.add(el.tagName.toLowerCase() + " " + name);
    }
    return Array.from(keys).sort();
  },

  // The blocks of the page as the server renders it now (a live refresh's request).
  async blocksOnServer(url) {
    const headers = {"X-Live-Refresh": "1"};
    const response = await fetch(url, {headers: headers, credentials: "same-origin"});
    return this.blocks(new DOMParser().parseFromString(await response.text(), "text/html"));
  },

  // Visible text a script wrote from a missing value. "null" counts outside
  // JSON, where it is a literal of the data shown.
  badText() {
    const bad = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const holder = node.parentElement;
      if (!holder || holder.closest("script, style, template") || !holder.checkVisibility()) continue;
      const text = node.textContent;
      const missing = /undefined|\bNaN\b|\[object Object\]/.test(text);
      if (missing || (!holder.closest(".j-lit") && /\bnull\b/.test(text))) bad.push(text.trim().slice(0, 120));
    }
    return bad;
  },
})
