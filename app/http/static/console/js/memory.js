// My agents' memory (every member, own memories only): by namespace, searchable with the
// same recall agents use, each key's versions, masked PII as placeholders, source state,
// forget a key or one version.
import { gql } from "./api.js";
import { badge, confirmDialog, errorText, field, h, maskedText, statusLine, when } from "./ui.js";

const MEMORY = "id namespace key text version recordedAt supersededAt sourceState citations { passageId sourceState }";
const LIST = `query($i: ListMemoriesInput) { listMemories(input: $i) { hidden nextCursor memories { ${MEMORY} } } }`;
const RECALL = `query($i: RecallMemoriesInput!) { recallMemories(input: $i) { hidden candidates
  legs { name status detail } memories { score memory { ${MEMORY} } } } }`;
const FORGET = `mutation($i: ForgetMemoryInput!) { forgetMemory(input: $i) { deleted } }`;

export async function render(root) {
  const query = h("input", { type: "search", autocomplete: "off", maxlength: 1000 });
  const namespace = h("input", { type: "text", autocomplete: "off", maxlength: 64 });
  const status = statusLine();
  const results = h("div", { class: "memories" });
  const form = h(
    "form",
    { class: "card toolbar", role: "search", "aria-label": "Search my agents' memory" },
    field("Search (the same recall your agents use)", query, "Empty: every memory, newest first."),
    field("Namespace", namespace, "Optional: one namespace only."),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Search")),
  );
  root.append(
    h("h1", {}, "My agents' memory"),
    h(
      "p",
      { class: "lead" },
      "Notes your agents kept for you. Only you can read them; personal data was masked before storage.",
    ),
    form,
    status,
    results,
  );

  let cursor = null;
  async function load(more = false, note = null) {
    const q = query.value.trim();
    const ns = namespace.value.trim() || null;
    status.show("Loading…");
    try {
      let rows;
      let hidden;
      if (q) {
        const out = (await gql(RECALL, { i: { query: q, namespace: ns, limit: 50 } })).recallMemories;
        rows = out.memories.map((r) => ({ ...r.memory, score: r.score }));
        hidden = out.hidden;
        cursor = null;
        const skipped = out.legs.filter((l) => l.status !== "USED").map((l) => `${l.name}: ${l.detail}`);
        status.show(
          `${rows.length} of ${out.candidates} candidates ranked` + (skipped.length ? ` (${skipped.join("; ")})` : ""),
        );
      } else {
        const out = (await gql(LIST, { i: { namespace: ns, limit: 100, cursor: more ? cursor : null } }))
          .listMemories;
        rows = out.memories;
        hidden = out.hidden;
        cursor = out.nextCursor;
        status.show(rows.length || more ? `${rows.length} ${rows.length === 1 ? "memory" : "memories"}` : "No memories yet.");
      }
      draw(rows, hidden, more);
      if (note) status.show(note, "ok");
    } catch (err) {
      status.show(errorText(err), "error");
    }
  }

  function draw(rows, hidden, more) {
    if (!more) results.replaceChildren();
    if (hidden) {
      results.append(
        h("p", { class: "status info" }, `${hidden} hidden: a cited source was deleted, expired or is unreadable.`),
      );
    }
    const groups = new Map();
    for (const m of rows) {
      if (!groups.has(m.namespace)) groups.set(m.namespace, []);
      groups.get(m.namespace).push(m);
    }
    for (const [ns, items] of groups) {
      results.append(
        h(
          "section",
          { class: "namespace", "aria-label": `Namespace ${ns}` },
          h("h2", {}, h("span", { class: "hint" }, "namespace "), ns),
          h("ul", { class: "memory-list" }, items.map(memoryItem)),
        ),
      );
    }
    results.querySelector(".more")?.remove();
    if (cursor) {
      results.append(
        h("button", { type: "button", class: "secondary more", on: { click: () => load(true) } }, "Load more"),
      );
    }
  }

  function memoryItem(m) {
    const versionsSlot = h("div", { class: "versions" });
    const actions = h("div", { class: "row-actions" });
    if (m.key !== null) {
      const btn = h("button", { type: "button", class: "secondary", "aria-expanded": "false" }, "Versions");
      btn.addEventListener("click", async () => {
        if (btn.getAttribute("aria-expanded") === "true") {
          btn.setAttribute("aria-expanded", "false");
          versionsSlot.replaceChildren();
          return;
        }
        btn.setAttribute("aria-expanded", "true");
        await showVersions(m, versionsSlot);
      });
      actions.append(btn);
    }
    const forget = h("button", { type: "button", class: "danger" }, m.key !== null ? "Forget key" : "Forget");
    forget.setAttribute("aria-label", m.key !== null ? `Forget key ${m.key} (every version)` : "Forget this memory");
    forget.addEventListener("click", async () => {
      const ok = await confirmDialog({
        title: m.key !== null ? `Forget “${m.key}”?` : "Forget this memory?",
        body:
          m.key !== null
            ? `Every version of ${m.namespace} / ${m.key} is deleted. Your agents will not recall it again.`
            : "This memory is deleted. Your agents will not recall it again.",
        confirm: "Forget",
      });
      if (!ok) return;
      try {
        const n = (await gql(FORGET, { i: { memoryId: m.id } })).forgetMemory.deleted;
        await load(false, `Forgot ${n} version${n === 1 ? "" : "s"}.`);
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    actions.append(forget);
    return h(
      "li",
      { class: "memory card", dataset: { memory: m.id } },
      h(
        "div",
        { class: "memory-head" },
        h("span", { class: "mono" }, m.key ?? "(no key)"),
        badge(`v${m.version}`),
        sourceBadge(m),
        m.score !== undefined ? h("span", { class: "hint" }, `score ${m.score.toFixed(4)}`) : null,
        h("span", { class: "hint" }, when(m.recordedAt)),
      ),
      h("p", { class: "memory-text" }, maskedText(m.text)),
      m.citations.length
        ? h("div", { class: "hint" }, `cites ${m.citations.map((c) => `${c.passageId} (${c.sourceState})`).join(", ")}`)
        : null,
      actions,
      versionsSlot,
    );
  }

  async function showVersions(m, slot) {
    slot.replaceChildren(h("p", { class: "hint" }, "Loading versions…"));
    try {
      const out = (
        await gql(LIST, { i: { namespace: m.namespace, key: m.key, allVersions: true, limit: 100 } })
      ).listMemories;
      slot.replaceChildren(
        h(
          "ol",
          { class: "version-list", "aria-label": `Versions of ${m.key}` },
          out.memories.map((v) => {
            const btn = h("button", { type: "button", class: "danger small" }, "Forget this version");
            btn.setAttribute("aria-label", `Forget version ${v.version} of ${m.key}`);
            btn.addEventListener("click", async () => {
              const ok = await confirmDialog({
                title: `Forget version ${v.version} of “${m.key}”?`,
                body: v.supersededAt
                  ? "Only this past version is deleted."
                  : "This is the current version: it is deleted and the newest remaining version becomes current.",
                confirm: "Forget version",
              });
              if (!ok) return;
              try {
                await gql(FORGET, { i: { memoryId: v.id, onlyVersion: true } });
                await load(false, `Forgot version ${v.version} of ${m.key}.`);
              } catch (err) {
                status.show(errorText(err), "error");
              }
            });
            return h(
              "li",
              { dataset: { memory: v.id } },
              h(
                "div",
                { class: "memory-head" },
                badge(`v${v.version}`),
                v.supersededAt ? badge("superseded", "muted") : badge("current", "ok"),
                sourceBadge(v),
                h("span", { class: "hint" }, `${when(v.recordedAt)}${v.supersededAt ? ` → ${when(v.supersededAt)}` : ""}`),
                btn,
              ),
              h("p", { class: "memory-text" }, maskedText(v.text)),
            );
          }),
        ),
      );
    } catch (err) {
      slot.replaceChildren(h("p", { class: "status error", role: "alert" }, errorText(err)));
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    load();
  });
  await load();
}

function sourceBadge(m) {
  if (!m.citations || !m.citations.length) return badge("no cited source", "muted");
  return m.sourceState === "CHANGED"
    ? badge("source CHANGED: a cited passage changed", "warn")
    : badge("source CURRENT", "ok");
}
