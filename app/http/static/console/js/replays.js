// Replays: open a recorded pack by its replay id (from the pack explorer, a gap, or pasted),
// VERIFY each item against the current documents, or RECOMPUTE it with the task under its
// recorded conditions and show the diff (added, removed, moved). #/replays/<replayId>.
import { gql } from "./api.js";
import { badge, dataTable, errorText, field, fill, h, routeArg, statusLine, when } from "./ui.js";

const CITE = "documentId passageId";
const REPLAY = `query($id: ID!, $mode: ReplayMode!, $task: String) { replay(replayId: $id, mode: $mode, task: $task) {
  replayId packId mode recordedAt expiresAt asOf { validTime systemTime }
  items { rank kind status currentVersionId citation { ${CITE} } }
  pack { packId items { rank kind documentTitle } }
  diff { unchanged added { rank kind citation { ${CITE} } } removed { rank kind citation { ${CITE} } }
    moved { kind oldRank newRank citation { ${CITE} } } } } }`;
const STATE = { UNCHANGED: "ok", CHANGED: "warn", UNAVAILABLE: "bad" };

export async function render(root, ctx, arg) {
  const { id } = routeArg(arg);
  const replayId = h("input", { type: "text", required: true, autocomplete: "off", spellcheck: "false", value: id || undefined });
  const task = h("textarea", { rows: 2, maxlength: 4000 });
  const status = statusLine();
  const out = h("div", { class: "replay-out" });
  const verify = h("button", { type: "submit", class: "primary", value: "VERIFY" }, "Verify");
  const recompute = h("button", { type: "submit", class: "secondary", value: "RECOMPUTE" }, "Recompute");
  const form = h(
    "form",
    { class: "card", "aria-label": "Replay a pack" },
    field("Replay id", replayId, "From the pack explorer's header (rpl_…), a gap, or pasted. Your own packs, kept 30 days."),
    field("Task (for Recompute)", task, "Records keep only the task's SHA-256: give the same task to rebuild the pack."),
    h("div", { class: "actions" }, recompute, verify),
    status,
  );
  root.append(
    h("h1", {}, "Replays"),
    h("p", { class: "lead" }, "Check a recorded pack against today's documents, or rebuild it under its recorded conditions."),
    form,
    out,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const mode = (ev.submitter && ev.submitter.value) || "VERIFY";
    if (mode === "RECOMPUTE" && !task.value.trim()) {
      status.show("Recompute needs the task (records keep only its SHA-256).", "error");
      task.focus();
      return;
    }
    status.show(mode === "VERIFY" ? "Verifying…" : "Recomputing…");
    try {
      const r = (await gql(REPLAY, { id: replayId.value.trim(), mode, task: mode === "RECOMPUTE" ? task.value : null })).replay;
      if (location.hash !== `#/replays/${r.replayId}`) history.replaceState(null, "", `#/replays/${r.replayId}`);
      status.show(`${mode === "VERIFY" ? "Verified" : "Recomputed"} pack ${r.packId}.`, "ok");
      fill(out, header(r), mode === "VERIFY" ? verifyView(r) : diffView(r));
    } catch (err) {
      status.show(errorText(err), "error");
      out.replaceChildren();
    }
  });
  if (id) verify.click();
}

function header(r) {
  return h(
    "dl",
    { class: "facts card" },
    h("dt", {}, "Pack"), h("dd", { class: "mono" }, r.packId),
    h("dt", {}, "Recorded"), h("dd", {}, when(r.recordedAt)),
    h("dt", {}, "As of"), h("dd", {}, `valid ${when(r.asOf.validTime)} · system ${when(r.asOf.systemTime)}`),
    h("dt", {}, "Kept until"), h("dd", {}, when(r.expiresAt)),
  );
}

function citeLink(c) {
  if (!c || !c.documentId) return "—";
  const href = `#/documents/${encodeURIComponent(c.documentId)}${c.passageId ? `?passage=${encodeURIComponent(c.passageId)}` : ""}`;
  return h("a", { href, class: "mono" }, c.passageId || c.documentId);
}

function verifyView(r) {
  const counts = {};
  for (const it of r.items) counts[it.status] = (counts[it.status] || 0) + 1;
  return h(
    "section",
    { "aria-label": "Verified items" },
    h("h2", {}, "Items"),
    h("p", {}, Object.entries(counts).map(([s, n]) => [badge(`${n} ${s.toLowerCase()}`, STATE[s]), " "])),
    dataTable(
      "Verified items",
      ["Rank", "Kind", "Citation", "State", "Current version"],
      r.items.map((it) => [
        { th: `#${it.rank}` },
        it.kind,
        citeLink(it.citation),
        badge(it.status.toLowerCase(), STATE[it.status]),
        h("span", { class: "mono" }, it.currentVersionId || "—"),
      ]),
    ),
  );
}

function diffView(r) {
  const d = r.diff;
  const rows = [
    ...d.added.map((x) => [{ th: "added" }, x.kind, citeLink(x.citation), `— → #${x.rank}`]),
    ...d.removed.map((x) => [{ th: "removed" }, x.kind, citeLink(x.citation), `#${x.rank} → —`]),
    ...d.moved.map((x) => [{ th: "moved" }, x.kind, citeLink(x.citation), `#${x.oldRank} → #${x.newRank}`]),
  ];
  return h(
    "section",
    { "aria-label": "Recompute diff" },
    h("h2", {}, "Diff: recorded → rebuilt"),
    h(
      "p",
      {},
      badge(`${d.added.length} added`, d.added.length ? "warn" : "ok"), " ",
      badge(`${d.removed.length} removed`, d.removed.length ? "warn" : "ok"), " ",
      badge(`${d.moved.length} moved`, d.moved.length ? "warn" : "ok"), " ",
      badge(`${d.unchanged} unchanged`),
    ),
    rows.length ? dataTable("Changes", ["Change", "Kind", "Citation", "Rank"], rows) : h("p", { class: "empty" }, "The rebuilt pack is the recorded pack."),
  );
}
