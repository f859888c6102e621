// Pack explorer: build a context pack over the contextPackStream subscription
// (graphql-transport-ws) and show each item the moment it arrives; open an item's document
// version with the cited span highlighted; copy the request as GraphQL. Each item links to its
// document page (#/documents/…), a context-set item to its set entry (#/sets/…?entry=…), the
// pack to its replay (#/replays/…).
import { gql, subscribe } from "./api.js";
import { badge, copyText, errorText, field, fill, h, statusLine, when } from "./ui.js";
import { sha256Hex, splitByCodePoints } from "./spans.js";

const CITATION = "documentId versionId passageId start end sha256";
const STREAM = `subscription ContextPackStream($input: ContextPackInput!) {
  contextPackStream(input: $input) {
    __typename
    ... on PackHeader { packId replayId maxTokens retrieval tokenizer traceId asOf { validTime systemTime } }
    ... on PackItem {
      rank kind text tokens trust score ranks { lexical dense } documentTitle collectionId
      superseded contradiction contradicts
      citation { ${CITATION} }
      alternateCitations { ${CITATION} }
      contextSetEntry { contextSetId entryId setVersion }
    }
    ... on PackFooter {
      tokensUsed itemCount truncated complete incompleteReasons latencyMs candidates duplicatesMerged notes
    }
  }
}`;
const DOCUMENT = `query($id: ID!, $asOf: AsOfInput) { document(id: $id, asOf: $asOf) {
  id title externalId versions { id number text recordedAt validFrom validTo } } }`;
const ENUM_KEYS = new Set(["retrieval", "coverage", "sources"]);

let stopStream = null;

export function leave() {
  if (stopStream) stopStream();
  stopStream = null;
}

/** A GraphQL input literal of a JSON value (enum fields unquoted), for "Copy as GraphQL". */
export function literal(value, key = "") {
  if (Array.isArray(value)) return `[${value.map((v) => literal(v, key)).join(", ")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${literal(v, k)}`)
      .join(", ")}}`;
  }
  if (typeof value === "string" && ENUM_KEYS.has(key)) return value;
  return JSON.stringify(value);
}

function isoFromLocal(value) {
  // <input type=datetime-local> has no zone: the console reads it as UTC
  return value ? `${value.length === 16 ? `${value}:00` : value}Z` : null;
}

export async function render(root) {
  const task = h("textarea", { rows: 3, required: true, maxlength: 4000, spellcheck: "false" });
  const maxTokens = h("input", { type: "number", min: 256, max: 32000, step: 1, value: 1200, required: true });
  const retrieval = h(
    "select",
    {},
    h("option", { value: "HYBRID" }, "HYBRID (BM25 + dense, fused)"),
    h("option", { value: "LEXICAL" }, "LEXICAL (BM25 only)"),
    h("option", { value: "DENSE" }, "DENSE (vectors only)"),
  );
  const validTime = h("input", { type: "datetime-local", step: 1 });
  const systemTime = h("input", { type: "datetime-local", step: 1 });
  const docIds = h("input", { type: "text", autocomplete: "off", spellcheck: "false", placeholder: "doc_…, doc_…" });
  const collBox = h("fieldset", { class: "inline" }, h("legend", {}, "Collections"));
  const setChoice = h("select", {}, h("option", { value: "" }, "None"));
  const run = h("button", { type: "submit", class: "primary" }, "Stream pack");
  const stop = h("button", { type: "button", class: "secondary", disabled: true }, "Stop");
  const copyGql = h("button", { type: "button", class: "secondary" }, "Copy as GraphQL");
  const status = statusLine();
  const form = h(
    "form",
    { class: "card explorer-form", "aria-label": "Context pack request" },
    field("Task", task, "The agent's task or question, 1–4,000 characters (any language)."),
    h(
      "div",
      { class: "row" },
      field("Budget (max tokens)", maxTokens, "256–32,000 cl100k tokens."),
      field("Retrieval mode", retrieval),
      field("As of: valid time (UTC)", validTime, "When the content must be true. Empty: now."),
      field("As of: system time (UTC)", systemTime, "What Cairn had recorded by then. Empty: now."),
      field("Context set", setChoice, "Set-first: its matched entries head the pack."),
    ),
    h("details", {}, h("summary", {}, "Filters"), collBox, field("Document ids", docIds, "Comma-separated, at most 20.")),
    h("div", { class: "actions" }, copyGql, stop, run),
    status,
  );
  const gqlOut = h("pre", { class: "code", hidden: true, tabindex: 0, "aria-label": "The request as GraphQL" });
  const header = h("div", { class: "pack-header" });
  const items = h("ol", { class: "items", "aria-label": "Pack items, in rank order", "aria-live": "polite" });
  const footer = h("div", { class: "pack-footer" });
  const detail = h("aside", { class: "detail card", "aria-label": "Cited document", hidden: true });
  root.append(
    h("h1", {}, "Pack explorer"),
    form,
    gqlOut,
    h("div", { class: "explorer" }, h("section", { class: "results", "aria-label": "Pack" }, header, items, footer), detail),
  );

  function input() {
    const i = { task: task.value, budget: { maxTokens: Number(maxTokens.value) }, retrieval: retrieval.value };
    const vt = isoFromLocal(validTime.value);
    const st = isoFromLocal(systemTime.value);
    if (vt || st) i.asOf = { ...(vt && { validTime: vt }), ...(st && { systemTime: st }) };
    if (setChoice.value) i.contextSetId = setChoice.value;
    const collectionIds = [...collBox.querySelectorAll("input:checked")].map((b) => b.value);
    const documentIds = docIds.value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (collectionIds.length || documentIds.length) {
      i.filters = { ...(collectionIds.length && { collectionIds }), ...(documentIds.length && { documentIds }) };
    }
    return i;
  }

  copyGql.addEventListener("click", async () => {
    const selection = STREAM.slice(STREAM.indexOf("{\n    __typename"));
    const text = `subscription {\n  contextPackStream(input: ${literal(input())}) ${selection.replace(/\n  /g, "\n  ").trimEnd()}`;
    gqlOut.textContent = text;
    gqlOut.hidden = false;
    const ok = await copyText(text);
    copyGql.textContent = ok ? "Copied" : "Shown below: select and copy";
    setTimeout(() => (copyGql.textContent = "Copy as GraphQL"), 2000);
  });

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    leave();
    const req = input();
    let maxTok = req.budget.maxTokens;
    let used = 0;
    const started = performance.now();
    header.replaceChildren();
    items.replaceChildren();
    footer.replaceChildren();
    detail.hidden = true;
    status.show("Streaming…");
    run.disabled = true;
    stop.disabled = false;
    const done = () => {
      run.disabled = false;
      stop.disabled = true;
      stopStream = null;
    };
    stopStream = subscribe(STREAM, { input: req }, {
      next(data) {
        const ev = data.contextPackStream;
        const at = performance.now();
        if (ev.__typename === "PackHeader") {
          maxTok = ev.maxTokens;
          header.dataset.receivedAt = String(at);
          header.replaceChildren(
            h("span", {}, h("span", { class: "hint" }, "pack "), h("span", { class: "mono" }, ev.packId)),
            h("span", {}, h("span", { class: "hint" }, "mode "), ev.retrieval),
            h("span", {}, h("span", { class: "hint" }, "as of "), when(ev.asOf.validTime)),
            h("span", {}, h("span", { class: "hint" }, "trace "), h("span", { class: "mono" }, ev.traceId)),
            h("a", { href: `#/replays/${encodeURIComponent(ev.replayId)}` }, "Replay this pack"),
          );
        } else if (ev.__typename === "PackItem") {
          used += ev.tokens;
          const li = itemView(ev, maxTok, used, req.asOf || null);
          li.dataset.receivedAt = String(at);
          li.dataset.ms = (at - started).toFixed(1);
          items.append(li);
          status.show(`Streaming… ${items.children.length} item${items.children.length === 1 ? "" : "s"}`);
        } else {
          footer.dataset.receivedAt = String(at);
          footer.dataset.itemsShown = String(items.children.length);
          fill(
            footer,
            h(
              "div",
              { class: "budget" },
              h("span", {}, `${ev.tokensUsed} / ${maxTok} tokens`),
              h("span", { class: "bar", role: "img", "aria-label": `${ev.tokensUsed} of ${maxTok} tokens used` },
                h("span", { class: "fill", style: { width: `${Math.min(100, (100 * ev.tokensUsed) / maxTok).toFixed(1)}%` } })),
            ),
            h(
              "div",
              { class: "facts" },
              `${ev.itemCount} item${ev.itemCount === 1 ? "" : "s"} · ${ev.candidates} candidates · ${ev.duplicatesMerged} duplicates merged · ` +
                `${ev.latencyMs.toFixed(0)} ms server · ${(at - started).toFixed(0)} ms here`,
              ev.truncated ? badge("truncated", "warn") : null,
              ev.complete ? badge("complete", "ok") : badge(`incomplete: ${ev.incompleteReasons.join(", ")}`, "warn"),
            ),
            ev.notes.length ? h("ul", { class: "notes" }, ev.notes.map((n) => h("li", {}, n))) : null,
          );
        }
      },
      error(err) {
        status.show(errorText(err), "error");
        done();
      },
      complete() {
        status.show(`Done: ${items.children.length} item${items.children.length === 1 ? "" : "s"}.`, "ok");
        done();
      },
    });
  });
  stop.addEventListener("click", () => {
    leave();
    status.show("Stopped.");
    run.disabled = false;
    stop.disabled = true;
  });

  // collections load last: every handler above is attached before the first await
  try {
    const { collections } = await gql("{ collections { id name documentCount } }");
    for (const c of collections) {
      const box = h("input", { type: "checkbox", value: c.id, id: `coll-${c.id}` });
      collBox.append(h("span", { class: "check" }, box, h("label", { for: box.id }, `${c.name} (${c.documentCount})`)));
    }
    if (!collections.length) collBox.append(h("span", { class: "hint" }, "No collections yet."));
  } catch (err) {
    collBox.append(h("span", { class: "hint" }, errorText(err)));
  }
  try {
    const { contextSets } = await gql("{ contextSets(limit: 50) { id name active } }");
    for (const cs of contextSets) if (cs.active) setChoice.append(h("option", { value: cs.id }, cs.name));
  } catch {
    // the choice is optional: without the list, packs are built without a set
  }

  function itemView(it, maxTok, usedSoFar, asOf) {
    const flags = [
      it.contextSetEntry ? badge(it.kind.replace("_", " ").toLowerCase()) : null,
      badge(it.trust, it.trust === "APPROVED" ? "ok" : "muted"),
      it.kind === "WHOLE_DOCUMENT" ? badge("whole document") : null,
      it.superseded ? badge("superseded", "warn") : null,
      it.contradiction ? badge("contradiction", "bad") : null,
      (it.alternateCitations || []).length ? badge(`+${it.alternateCitations.length} duplicate${it.alternateCitations.length === 1 ? "" : "s"}`) : null,
    ];
    const pct = (n) => `${Math.min(100, (100 * n) / maxTok).toFixed(1)}%`;
    const open = h(
      "button",
      { type: "button", class: "item", "aria-label": `Open item ${it.rank}: ${it.documentTitle}` },
      h(
        "div",
        { class: "item-head" },
        h("span", { class: "rank" }, `#${it.rank}`),
        h("span", { class: "title" }, it.documentTitle),
        h("span", { class: "flags" }, flags),
      ),
      h(
        "div",
        { class: "item-meta" },
        h("span", {}, `score ${it.score.toFixed(4)}`),
        h("span", {}, `BM25 ${it.ranks.lexical ? `#${it.ranks.lexical}` : "—"}`),
        h("span", {}, `dense ${it.ranks.dense ? `#${it.ranks.dense}` : "—"}`),
        h("span", {}, `${it.tokens} tokens`),
      ),
      h(
        "span",
        { class: "bar", role: "img", "aria-label": `${it.tokens} tokens; ${usedSoFar} of ${maxTok} used so far` },
        h("span", { class: "fill before", style: { width: pct(usedSoFar - it.tokens) } }),
        h("span", { class: "fill", style: { width: pct(it.tokens) } }),
      ),
      h("p", { class: "item-text" }, it.text.length > 280 ? `${it.text.slice(0, 280)}…` : it.text),
    );
    open.addEventListener("click", () => {
      for (const el of items.querySelectorAll(".item[aria-pressed]")) el.removeAttribute("aria-pressed");
      open.setAttribute("aria-pressed", "true");
      if (it.citation) showCitation(it.citation, it, asOf);
      else detail.hidden = true;
    });
    const links = [];
    const e = it.contextSetEntry;
    if (e) {
      links.push(
        h("a", { href: `#/sets/${encodeURIComponent(e.contextSetId)}?entry=${encodeURIComponent(e.entryId)}` }, `Set entry (set version ${e.setVersion})`),
      );
    }
    if (it.citation) {
      const c = it.citation;
      links.push(
        h("a", { href: `#/documents/${encodeURIComponent(c.documentId)}${c.passageId ? `?passage=${encodeURIComponent(c.passageId)}` : ""}` }, "Document page"),
      );
    }
    return h("li", { dataset: { rank: String(it.rank), kind: it.kind } }, open, links.length ? h("div", { class: "item-links" }, links) : null);
  }

  async function showCitation(citation, it, asOf) {
    detail.hidden = false;
    detail.replaceChildren(h("p", { class: "hint" }, "Loading the document…"));
    try {
      const doc = (await gql(DOCUMENT, { id: citation.documentId, asOf })).document;
      const version = doc.versions.find((v) => v.id === citation.versionId);
      if (!version) throw new Error(`version ${citation.versionId} is not visible at this point in time`);
      const { before, span, after } = splitByCodePoints(version.text, citation.start, citation.end);
      const mark = h("mark", { class: "cited", id: "cited-span" }, span);
      const hash = await sha256Hex(span);
      const check =
        hash === null
          ? badge("sha256 not checked (needs a secure origin)", "muted")
          : hash === citation.sha256
            ? badge("sha256 matches", "ok")
            : badge("sha256 differs", "bad");
      const alternates = it.alternateCitations.map((alt) => {
        const b = h("button", { type: "button", class: "link" }, `${alt.documentId} · ${alt.passageId || "whole"}`);
        b.addEventListener("click", () => showCitation(alt, { ...it, alternateCitations: [] }, asOf));
        return h("li", {}, b);
      });
      const close = h("button", { type: "button", class: "secondary small" }, "Close");
      close.addEventListener("click", () => (detail.hidden = true));
      fill(
        detail,
        h("div", { class: "section-head" }, h("h2", {}, doc.title || doc.externalId), close),
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "Document"), h("dd", { class: "mono" }, doc.id),
          h("dt", {}, "Version"), h("dd", {}, `${version.number} (recorded ${when(version.recordedAt)}, valid from ${when(version.validFrom)})`),
          h("dt", {}, "Span"), h("dd", { class: "mono" }, `[${citation.start}, ${citation.end}) code points · passage ${citation.passageId || "—"}`),
          h("dt", {}, "Check"), h("dd", {}, check),
        ),
        h("div", { class: "doc-text", tabindex: 0, "aria-label": "Document version text" }, before, mark, after),
        alternates.length ? h("h3", {}, "Alternates (merged duplicates)") : null,
        alternates.length ? h("ul", { class: "alternates" }, alternates) : null,
      );
      mark.scrollIntoView({ block: "center" });
    } catch (err) {
      detail.replaceChildren(h("p", { class: "status error", role: "alert" }, errorText(err)));
    }
  }
}
