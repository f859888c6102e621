// Gaps inbox (editors and above): what agents could not find, newest first. One step turns a gap
// into a verified answer or a definition of a chosen set (prefilled from the gap), or dismisses
// it with a reason; a closed gap keeps its resolution (who, when, the entry it became).
import { gql } from "./api.js";
import { badge, button, errorText, field, fill, h, statusLine, when } from "./ui.js";

const GAP = `id task missing reporterKind credentialName memberName packId traceId createdAt status resolution
  resolvedByName resolvedAt resolvedContextSetId resolvedEntryId`;
const LIST = `query($after: String) { contextGaps(first: 50, after: $after) { totalCount endCursor hasNextPage gaps { ${GAP} } } }`;
const SETS = "{ contextSets(limit: 50) { id name active } }";
const RESOLVE = `mutation($id: ID!, $i: ResolveContextGapInput!) { resolveContextGap(id: $id, input: $i) { ${GAP} } }`;
const DISMISS = `mutation($id: ID!, $r: String!) { dismissContextGap(id: $id, reason: $r) { ${GAP} } }`;
const STATUS = { OPEN: ["open", "warn"], RESOLVED: ["resolved", "ok"], DISMISSED: ["dismissed", "muted"] };

export async function render(root, ctx) {
  root.append(h("h1", {}, "Gaps inbox"));
  if (!ctx.can("document:write")) {
    root.append(h("p", { class: "status info", role: "note" }, `Gaps are reviewed by editors and above; your role is ${ctx.viewer.role}.`));
    return;
  }
  const status = statusLine();
  const listEl = h("ol", { class: "gap-list", "aria-label": "Reported gaps, newest first" });
  const more = button("Load more", () => load(cursor));
  more.hidden = true;
  const onlyOpen = h("input", { type: "checkbox", id: "gaps-open", checked: true });
  root.append(
    h("p", { class: "lead" }, "What agents reported missing, newest first. Turn one into a set entry in one step, or dismiss it with a reason."),
    h("div", { class: "switch" }, onlyOpen, h("label", { for: "gaps-open" }, "Open gaps only")),
    status,
    listEl,
    more,
  );
  const sets = (await gql(SETS)).contextSets;
  let cursor = null;
  onlyOpen.addEventListener("change", () => {
    for (const li of listEl.children) li.hidden = onlyOpen.checked && li.dataset.status !== "OPEN";
  });

  async function load(after) {
    const page = (await gql(LIST, { after })).contextGaps;
    if (!after) listEl.replaceChildren();
    for (const g of page.gaps) listEl.append(gapView(g));
    cursor = page.endCursor;
    more.hidden = !page.hasNextPage;
    if (!listEl.children.length) listEl.append(h("li", { class: "empty" }, "No gaps reported yet."));
    onlyOpen.dispatchEvent(new Event("change"));
  }

  function gapView(g) {
    const li = h("li", { class: "card gap", dataset: { gap: g.id, status: g.status } });
    const [label, kind] = STATUS[g.status];
    const slot = h("div");
    const who = g.reporterKind === "agent" ? `agent ${g.credentialName || "?"} (for ${g.memberName})` : `member ${g.memberName}`;
    const actions =
      g.status === "OPEN"
        ? h(
            "div",
            { class: "actions" },
            button("Make verified answer", () => slot.replaceChildren(resolveForm(g, "answer", li)), "primary", { "aria-label": `Make a verified answer of: ${g.task}` }),
            button("Make definition", () => slot.replaceChildren(resolveForm(g, "definition", li)), "secondary", { "aria-label": `Make a definition of: ${g.task}` }),
            button("Dismiss…", () => slot.replaceChildren(dismissForm(g, li)), "danger", { "aria-label": `Dismiss: ${g.task}` }),
          )
        : null;
    fill(
      li,
      h("div", { class: "memory-head" }, badge(label, kind), h("span", { class: "hint" }, `${when(g.createdAt)} · ${who}`)),
      h("h2", { class: "gap-task" }, g.task),
      h("p", {}, h("span", { class: "hint" }, "Missing: "), g.missing),
      g.packId || g.traceId
        ? h(
            "p",
            { class: "hint" },
            // a replay id (rpl_…) opens the replay; a pack id is shown to copy (replays are per credential)
            g.packId
              ? ["pack ", g.packId.startsWith("rpl_") ? h("a", { href: `#/replays/${encodeURIComponent(g.packId)}` }, g.packId) : h("span", { class: "mono" }, g.packId), " "]
              : null,
            g.traceId ? ["trace ", h("span", { class: "mono" }, g.traceId)] : null,
          )
        : null,
      g.status !== "OPEN"
        ? h(
            "p",
            { class: "resolution" },
            `${label} by ${g.resolvedByName || "?"} ${when(g.resolvedAt)}: ${g.resolution}`,
            g.resolvedContextSetId
              ? [" ", h("a", { href: `#/sets/${encodeURIComponent(g.resolvedContextSetId)}?entry=${encodeURIComponent(g.resolvedEntryId)}` }, "Open the entry")]
              : null,
          )
        : null,
      actions,
      slot,
    );
    return li;
  }

  function setChoice() {
    const sel = h("select", { required: true }, sets.map((s) => h("option", { value: s.id }, `${s.name}${s.active ? "" : " (inactive)"}`)));
    return sel;
  }

  function resolveForm(g, kind, li) {
    if (!sets.length) return h("p", { class: "status info" }, "Create a context set first (Context sets → New context set).");
    const set = setChoice();
    const inputs =
      kind === "answer"
        ? {
            question: h("textarea", { rows: 2, maxlength: 1000, required: true }),
            answer: h("textarea", { rows: 3, maxlength: 8000, required: true }),
          }
        : {
            term: h("input", { type: "text", maxlength: 200, required: true }),
            definition: h("textarea", { rows: 3, maxlength: 4000, required: true }),
            aliases: h("input", { type: "text" }),
          };
    if (kind === "answer") inputs.question.value = g.task.slice(0, 1000);
    else inputs.term.value = g.missing.slice(0, 200);
    const status = statusLine();
    const form = h(
      "form",
      { class: "card inset", "aria-label": kind === "answer" ? "New verified answer" : "New definition" },
      field("Context set", set),
      kind === "answer"
        ? [field("Question", inputs.question, "Prefilled from the gap's task."), field("Answer", inputs.answer)]
        : [
            field("Term", inputs.term, "Prefilled from what was missing."),
            field("Definition", inputs.definition),
            field("Aliases", inputs.aliases, "Comma-separated, at most 10."),
          ],
      h(
        "div",
        { class: "actions" },
        button("Cancel", () => form.remove()),
        h("button", { type: "submit", class: "primary" }, kind === "answer" ? "Add answer and resolve" : "Add definition and resolve"),
      ),
      status,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const input = { contextSetId: set.value };
      if (kind === "answer") input.verifiedAnswer = { question: inputs.question.value, answer: inputs.answer.value };
      else
        input.definition = {
          term: inputs.term.value,
          definition: inputs.definition.value,
          aliases: inputs.aliases.value.split(",").map((s) => s.trim()).filter(Boolean),
        };
      status.show("Saving…");
      try {
        const out = (await gql(RESOLVE, { id: g.id, i: input })).resolveContextGap;
        li.replaceWith(gapView(out));
        const done = listEl.querySelector(`[data-gap="${CSS.escape(out.id)}"]`);
        done.hidden = false;
        done.querySelector(".resolution").focus?.();
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    return form;
  }

  function dismissForm(g, li) {
    const reason = h("textarea", { rows: 2, maxlength: 2000, required: true });
    const status = statusLine();
    const form = h(
      "form",
      { class: "card inset", "aria-label": "Dismiss the gap" },
      field("Reason", reason, "1–2,000 characters; kept with the gap."),
      h("div", { class: "actions" }, button("Cancel", () => form.remove()), h("button", { type: "submit", class: "danger" }, "Dismiss gap")),
      status,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        const out = (await gql(DISMISS, { id: g.id, r: reason.value })).dismissContextGap;
        li.replaceWith(gapView(out));
        listEl.querySelector(`[data-gap="${CSS.escape(out.id)}"]`).hidden = false;
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    return form;
  }

  await load(null);
}
