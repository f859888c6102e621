// Small DOM helpers: elements are built with textContent only (never innerHTML with data).

/** h("button", {class: "primary", on: {click}}, "Save") → element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") Object.assign(el.style, v); // CSSOM: allowed by the page's CSP, unlike style=""
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = Boolean(v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replace `el`'s children, skipping null/false (DOM's replaceChildren would print "null"). */
export function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

let uid = 0;
/** A unique element id with a readable prefix. */
export function newId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** A labelled form field: <div class=field><label for>…</label>{control}{hint}</div>. */
export function field(label, control, hint) {
  if (!control.id) control.id = newId("f");
  const hintEl = hint ? h("div", { class: "hint", id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

/** A status region: show(text, kind) with kind "error" | "ok" | "info"; clear(). */
export function statusLine() {
  const el = h("div", { class: "status", role: "status", "aria-live": "polite" });
  el.show = (text, kind = "info") => {
    el.textContent = text;
    el.className = `status ${kind}`;
    el.setAttribute("role", kind === "error" ? "alert" : "status");
  };
  el.clear = () => {
    el.textContent = "";
    el.className = "status";
  };
  return el;
}

/** The text of an ApiError for people: message and code. */
export function errorText(err) {
  return err && err.code ? `${err.message} (${err.code})` : String((err && err.message) || err);
}

/** 2026-12-01 04:05 UTC (or "—"). */
export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/**
 * A modal confirmation (<dialog>: focus moves into it, Esc cancels). `typed`: the exact text
 * the person must type before the confirm button works. Resolves true when confirmed.
 */
export function confirmDialog({ title, body, confirm = "Confirm", danger = true, typed = null }) {
  return new Promise((resolve) => {
    const input = typed ? h("input", { type: "text", autocomplete: "off", spellcheck: "false" }) : null;
    const ok = h("button", { type: "submit", class: danger ? "danger" : "primary", disabled: Boolean(typed) }, confirm);
    const cancel = h("button", { type: "button", class: "secondary", value: "cancel" }, "Cancel");
    const form = h(
      "form",
      { method: "dialog" },
      h("h2", {}, title),
      h("p", {}, body),
      input ? field(`Type ${typed} to confirm`, input) : null,
      h("div", { class: "actions" }, cancel, ok),
    );
    const dlg = h("dialog", { class: "confirm", "aria-label": title }, form);
    if (input) input.addEventListener("input", () => (ok.disabled = input.value !== typed));
    let confirmed = false;
    form.addEventListener("submit", (ev) => {
      if (typed && input.value !== typed) {
        ev.preventDefault();
        return;
      }
      confirmed = true;
    });
    cancel.addEventListener("click", () => dlg.close());
    dlg.addEventListener("close", () => {
      dlg.remove();
      resolve(confirmed);
    });
    document.body.append(dlg);
    dlg.showModal();
    (input || cancel).focus();
  });
}

/** Copy text to the clipboard; resolves true on success (false where the browser refuses). */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** A copy button for `getText()`, saying "Copied" or "Select and copy" for a moment. */
export function copyButton(getText, label = "Copy") {
  const btn = h("button", { type: "button", class: "secondary" }, label);
  btn.addEventListener("click", async () => {
    const ok = await copyText(getText());
    btn.textContent = ok ? "Copied" : "Select the text and copy it";
    setTimeout(() => (btn.textContent = label), 2000);
  });
  return btn;
}

/** Text with masked personal data placeholders ([EMAIL_1], [PHONE_2] …) as <mark class=pii>. */
export function maskedText(text) {
  const out = h("span", { class: "masked" });
  const re = /\[[A-Z][A-Z_]*_\d+\]/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.append(text.slice(last, m.index));
    out.append(h("mark", { class: "pii", title: "personal data, masked before storage" }, m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

/** A small status badge. */
export function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}`.trim() }, text);
}

/**
 * A data table that turns into one card per row below 700 px (console.css `table.stack`): every
 * cell carries its column's name (data-label), so no column — and no action — is ever cut off.
 * `rows`: arrays of cells (a string, a Node, or {th: content} for the row header).
 */
export function dataTable(label, headers, rows, attrs = {}) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "grid stack", "aria-label": label, ...attrs },
      h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))),
      h(
        "tbody",
        {},
        rows.map((cells) => {
          const tr = h("tr");
          cells.forEach((c, i) => {
            const isHead = c && typeof c === "object" && !(c instanceof Node) && "th" in c;
            const cell = isHead
              ? h("th", { scope: "row", dataset: { label: headers[i] } }, c.th)
              : h("td", { dataset: { label: headers[i] } }, c);
            tr.append(cell);
          });
          if (cells.dataset) Object.assign(tr.dataset, cells.dataset);
          return tr;
        }),
      ),
    ),
  );
}

/** A button: button("Save", onClick, "primary", {aria-label…}). */
export function button(text, onClick, kind = "secondary", attrs = {}) {
  const b = h("button", { type: "button", class: kind, ...attrs }, text);
  if (onClick) b.addEventListener("click", onClick);
  return b;
}

/** The `route` argument split: "doc_1?x=1" → {id: "doc_1", params: URLSearchParams}. */
export function routeArg(arg) {
  const [id, query] = (arg || "").split("?");
  return { id: decodeURIComponent(id || ""), params: new URLSearchParams(query || "") };
}
