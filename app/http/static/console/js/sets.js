// Context sets: list, create, edit (editors and above) — verified answers with an optional
// citation picked from a passage, definitions with aliases, ordered instructions, required
// evidence, scope, the active switch. Every save is a version; the history shows who, when and a
// readable diff. "Try it" runs a set-first pack with the set and says why each entry joined.
// #/sets lists; #/sets/<setId>?entry=<entryId> opens a set at an entry.
import { gql } from "./api.js";
import { badge, button, dataTable, errorText, field, fill, h, routeArg, statusLine, when } from "./ui.js";
import { splitByCodePoints } from "./spans.js";

const LIST = "{ contextSets(limit: 50) { id name description active version updatedAt verifiedAnswers { id } definitions { id } } }";
const SET_FIELDS = `id name description active version updatedAt updatedBy scope { collectionIds documentIds }
  verifiedAnswers { id question answer citation { documentId passageId } }
  definitions { id term definition aliases } instructions { id text } requiredEvidence { id documentId passageId }`;
const GET = `query($id: ID!) { contextSet(contextSetId: $id) { ${SET_FIELDS} } }`;
const CREATE = `mutation($i: CreateContextSetInput!) { createContextSet(input: $i) { id } }`;
const UPDATE = `mutation($id: ID!, $i: UpdateContextSetInput!) { updateContextSet(id: $id, input: $i) { ${SET_FIELDS} } }`;
const VERSIONS = `query($id: ID!) { contextSetVersions(contextSetId: $id, limit: 50) { number actorId actorName change changedAt snapshot } }`;
const COLLECTIONS = "{ collections { id name } }";
const DOCS = `query($c: ID!) { documents(collectionId: $c, first: 100) { documents { id title externalId } } }`;
const DOCUMENT = `query($id: ID!) { document(id: $id) { id title externalId currentVersionId versions { id text passages { passageId ordinal start end } } } }`;
const TRY = `query($i: ContextPackInput!, $q: String!, $t: String!, $s: ID!) {
  contextPack(input: $i) { packId items { rank kind text tokens documentTitle citation { documentId passageId }
    contextSetEntry { contextSetId entryId setVersion } } notes }
  matchVerifiedAnswers(question: $q, contextSetId: $s, limit: 50) { verifiedAnswer { id } score coverage matchedWords }
  lookupDefinitions(term: $t, contextSetId: $s, limit: 50) { definition { id } score matchedWords }
}`;

export async function render(root, ctx, arg) {
  const { id, params } = routeArg(arg);
  if (id) return setPage(root, ctx, id, params.get("entry"));
  return listPage(root, ctx);
}

async function listPage(root, ctx) {
  const canWrite = ctx.can("document:write");
  const status = statusLine();
  const formSlot = h("div");
  const newBtn = canWrite
    ? button("New context set", () => {
        formSlot.replaceChildren(createForm());
        formSlot.querySelector("input").focus();
      }, "primary")
    : null;
  root.append(
    h("div", { class: "section-head" }, h("h1", {}, "Context sets"), newBtn),
    h(
      "p",
      { class: "lead" },
      "Curated answers, definitions and instructions that head every pack built with the set" +
        (canWrite ? "." : ` (read only: your role is ${ctx.viewer.role}).`),
    ),
    formSlot,
    status,
  );
  const sets = (await gql(LIST)).contextSets;
  root.append(
    sets.length
      ? dataTable(
          "Context sets",
          ["Set", "State", "Entries", "Version", "Updated"],
          sets.map((s) => [
            { th: h("a", { href: `#/sets/${encodeURIComponent(s.id)}` }, s.name) },
            s.active ? badge("active", "ok") : badge("inactive", "muted"),
            `${s.verifiedAnswers.length} answers · ${s.definitions.length} definitions`,
            String(s.version),
            when(s.updatedAt),
          ]),
        )
      : h("p", { class: "empty" }, "No context sets yet."),
  );

  function createForm() {
    const name = h("input", { type: "text", required: true, maxlength: 120, autocomplete: "off" });
    const description = h("textarea", { rows: 2, maxlength: 2000 });
    const form = h(
      "form",
      { class: "card", "aria-label": "New context set" },
      h("h2", {}, "New context set"),
      field("Name", name, "1–120 characters, unique in the workspace."),
      field("Description", description, "Optional, ≤ 2,000 characters; agents find sets by it."),
      h(
        "div",
        { class: "actions" },
        button("Cancel", () => formSlot.replaceChildren()),
        h("button", { type: "submit", class: "primary" }, "Create set"),
      ),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        const out = await gql(CREATE, { i: { name: name.value.trim(), description: description.value } });
        location.hash = `#/sets/${encodeURIComponent(out.createContextSet.id)}`;
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    return form;
  }
}

async function setPage(root, ctx, id, entryId) {
  const canWrite = ctx.can("document:write");
  const status = statusLine();
  let set;
  try {
    set = (await gql(GET, { id })).contextSet;
  } catch (err) {
    root.append(h("p", {}, h("a", { href: "#/sets" }, "← Context sets")), h("div", { class: "status error", role: "alert" }, errorText(err)));
    return;
  }
  const collections = (await gql(COLLECTIONS)).collections;
  const editor = h("div");
  const history = h("section", { "aria-labelledby": "history-title" });
  const tryIt = tryPanel(set);
  root.append(h("p", {}, h("a", { href: "#/sets" }, "← Context sets")), editor, tryIt, history);

  function draw() {
    fill(
      editor,
      h(
        "div",
        { class: "section-head" },
        h("h1", {}, set.name),
        h("span", {}, set.active ? badge("active", "ok") : badge("inactive", "muted"), " ", badge(`version ${set.version}`)),
      ),
      canWrite ? editForm() : readOnly(),
      status,
    );
    if (entryId) {
      const el = editor.querySelector(`[data-entry="${CSS.escape(entryId)}"]`);
      if (el) {
        el.classList.add("highlight");
        el.scrollIntoView({ block: "center" });
      }
    }
  }

  function readOnly() {
    return h(
      "div",
      { class: "card" },
      set.description ? h("p", {}, set.description) : null,
      scopeText(),
      h("h2", {}, "Verified answers"),
      list(set.verifiedAnswers, (a) => [h("strong", {}, a.question), h("p", {}, a.answer), citeText(a.citation)]),
      h("h2", {}, "Definitions"),
      list(set.definitions, (d) => [
        h("strong", {}, d.term),
        d.aliases.length ? h("span", { class: "hint" }, ` (also: ${d.aliases.join(", ")})`) : null,
        h("p", {}, d.definition),
      ]),
      h("h2", {}, "Instructions"),
      list(set.instructions, (i) => i.text, "ol"),
      h("h2", {}, "Required evidence"),
      list(set.requiredEvidence, (r) => citeText(r)),
    );
  }

  function list(items, view, tag = "ul") {
    if (!items.length) return h("p", { class: "empty" }, "None.");
    return h(tag, { class: "entries" }, items.map((e) => h("li", { id: `entry-${e.id}`, dataset: { entry: e.id } }, view(e))));
  }

  function citeText(c) {
    if (!c) return null;
    const href = `#/documents/${encodeURIComponent(c.documentId)}${c.passageId ? `?passage=${encodeURIComponent(c.passageId)}` : ""}`;
    return h("div", { class: "hint" }, "Cites ", h("a", { href }, c.passageId ? `passage ${c.passageId}` : `document ${c.documentId}`));
  }

  function scopeText() {
    const names = Object.fromEntries(collections.map((c) => [c.id, c.name]));
    const colls = set.scope.collectionIds.map((c) => names[c] || c);
    return h(
      "p",
      { class: "hint" },
      `Scope: ${colls.length ? colls.join(", ") : "no collections"}; ${set.scope.documentIds.length} more document(s).`,
    );
  }

  function editForm() {
    const name = h("input", { type: "text", required: true, maxlength: 120, value: set.name });
    const description = h("textarea", { rows: 2, maxlength: 2000 });
    description.value = set.description;
    const active = h("input", { type: "checkbox", role: "switch", id: "set-active", checked: set.active });
    const collBox = h(
      "fieldset",
      { class: "inline" },
      h("legend", {}, "Scope: collections"),
      collections.map((c) => {
        const box = h("input", { type: "checkbox", value: c.id, id: `scope-${c.id}`, checked: set.scope.collectionIds.includes(c.id) });
        return h("span", { class: "check" }, box, h("label", { for: box.id }, c.name));
      }),
    );
    const docIds = h("input", { type: "text", autocomplete: "off", spellcheck: "false", value: set.scope.documentIds.join(", ") });

    const answers = section("Verified answers", set.verifiedAnswers, answerRow, () => answerRow({ question: "", answer: "", citation: null }), "Add verified answer");
    const definitions = section("Definitions", set.definitions, definitionRow, () => definitionRow({ term: "", definition: "", aliases: [] }), "Add definition");
    const instructions = section("Instructions (in pack order)", set.instructions, instructionRow, () => instructionRow({ text: "" }), "Add instruction", true);
    const evidence = section("Required evidence", set.requiredEvidence, evidenceRow, () => evidenceRow({ documentId: "", passageId: null }), "Add required evidence");

    const form = h(
      "form",
      { class: "card set-editor", "aria-label": "Edit context set" },
      h("div", { class: "row" }, field("Name", name), field("Description", description)),
      h("div", { class: "switch" }, active, h("label", { for: "set-active" }, "Active (agents use it; bound credentials work)")),
      collBox,
      field("Scope: more documents", docIds, "Document ids, comma-separated (at most 100)."),
      answers.el,
      definitions.el,
      instructions.el,
      evidence.el,
      h("div", { class: "actions sticky-actions" }, h("button", { type: "submit", class: "primary" }, "Save (new version)")),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const input = {
        name: name.value.trim(),
        description: description.value,
        active: active.checked,
        scope: {
          collectionIds: [...collBox.querySelectorAll("input:checked")].map((b) => b.value),
          documentIds: docIds.value.split(",").map((s) => s.trim()).filter(Boolean),
        },
        verifiedAnswers: answers.values(),
        definitions: definitions.values(),
        instructions: instructions.values(),
        requiredEvidence: evidence.values(),
      };
      status.show("Saving…");
      try {
        const before = set.version;
        set = (await gql(UPDATE, { id: set.id, i: input })).updateContextSet;
        entryId = null;
        draw();
        status.show(set.version === before ? "Nothing changed." : `Saved as version ${set.version}.`, "ok");
        await loadHistory();
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    return form;
  }

  /** An editable list of rows; `values()` reads them in order. */
  function section(title, items, makeRow, blank, addLabel, ordered = false) {
    const listEl = h(ordered ? "ol" : "ul", { class: "entries editable" });
    const rows = [];
    const add = (row) => {
      rows.push(row);
      const remove = button("Remove", () => {
        rows.splice(rows.indexOf(row), 1);
        row.el.remove();
      }, "secondary small", { "aria-label": `Remove from ${title}` });
      const controls = h("div", { class: "row-actions" }, remove);
      if (ordered) {
        const move = (delta) => {
          const i = rows.indexOf(row);
          const j = i + delta;
          if (j < 0 || j >= rows.length) return;
          rows.splice(i, 1);
          rows.splice(j, 0, row);
          listEl.replaceChildren(...rows.map((r) => r.el));
          row.el.querySelector("textarea, input").focus();
        };
        controls.prepend(button("Up", () => move(-1), "secondary small", { "aria-label": "Move up" }), button("Down", () => move(1), "secondary small", { "aria-label": "Move down" }));
      }
      row.el.append(controls);
      listEl.append(row.el);
      return row;
    };
    items.forEach((e) => add(makeRow(e)));
    const addBtn = button(addLabel, () => add(blank()).el.querySelector("textarea, input").focus(), "secondary");
    return {
      el: h("fieldset", { class: "entry-section" }, h("legend", {}, title), listEl, addBtn),
      values: () => rows.map((r) => r.value()),
    };
  }

  function answerRow(a) {
    const q = h("textarea", { rows: 2, maxlength: 1000, required: true });
    q.value = a.question;
    const ans = h("textarea", { rows: 3, maxlength: 8000, required: true });
    ans.value = a.answer;
    let cite = a.citation ? { documentId: a.citation.documentId, passageId: a.citation.passageId } : null;
    const citeSlot = h("div", { class: "cite" });
    const drawCite = () =>
      fill(
        citeSlot,
        cite ? citeText(cite) : h("span", { class: "hint" }, "No citation."),
        button(cite ? "Change citation" : "Cite a passage…", async () => {
          const picked = await pickEvidence(collections, set.scope.collectionIds);
          if (picked) {
            cite = picked;
            drawCite();
          }
        }, "secondary small"),
        cite ? button("No citation", () => { cite = null; drawCite(); }, "secondary small") : null,
      );
    drawCite();
    const el = h("li", { class: "entry", dataset: a.id ? { entry: a.id } : {} }, field("Question", q), field("Answer", ans), citeSlot);
    if (a.id) el.id = `entry-${a.id}`;
    return { el, value: () => ({ question: q.value, answer: ans.value, citation: cite }) };
  }

  function definitionRow(d) {
    const term = h("input", { type: "text", maxlength: 200, required: true, value: d.term });
    const def = h("textarea", { rows: 2, maxlength: 4000, required: true });
    def.value = d.definition;
    const aliases = h("input", { type: "text", value: d.aliases.join(", ") });
    const el = h(
      "li",
      { class: "entry", dataset: d.id ? { entry: d.id } : {} },
      h("div", { class: "row" }, field("Term", term), field("Aliases", aliases, "Comma-separated, at most 10.")),
      field("Definition", def),
    );
    if (d.id) el.id = `entry-${d.id}`;
    return {
      el,
      value: () => ({ term: term.value, definition: def.value, aliases: aliases.value.split(",").map((s) => s.trim()).filter(Boolean) }),
    };
  }

  function instructionRow(i) {
    const text = h("textarea", { rows: 2, maxlength: 2000, required: true });
    text.value = i.text;
    const el = h("li", { class: "entry", dataset: i.id ? { entry: i.id } : {} }, field("Instruction", text));
    if (i.id) el.id = `entry-${i.id}`;
    return { el, value: () => text.value };
  }

  function evidenceRow(r) {
    let ref = r.documentId ? { documentId: r.documentId, passageId: r.passageId } : null;
    const slot = h("div", { class: "cite" });
    const drawRef = () =>
      fill(
        slot,
        ref ? citeText(ref) : h("span", { class: "hint" }, "Pick a document or one of its passages."),
        button(ref ? "Change" : "Pick evidence…", async () => {
          const picked = await pickEvidence(collections, set.scope.collectionIds);
          if (picked) {
            ref = picked;
            drawRef();
          }
        }, "secondary small"),
      );
    drawRef();
    const el = h("li", { class: "entry", dataset: r.id ? { entry: r.id } : {} }, slot);
    if (r.id) el.id = `entry-${r.id}`;
    return { el, value: () => ref || { documentId: "" } };
  }

  async function loadHistory() {
    const versions = (await gql(VERSIONS, { id: set.id })).contextSetVersions;
    fill(
      history,
      h("h2", { id: "history-title" }, "Version history"),
      h(
        "ol",
        { class: "version-list history", reversed: true },
        versions.map((v, i) => {
          const prev = versions[i + 1];
          const names = Object.fromEntries(collections.map((c) => [c.id, c.name]));
          const lines = prev ? diffSnapshots(prev.snapshot, v.snapshot, names) : ["created"];
          return h(
            "li",
            { class: "card", dataset: { version: String(v.number) } },
            h(
              "div",
              { class: "memory-head" },
              h("strong", {}, `Version ${v.number}`),
              h("span", {}, `by ${v.actorName || v.actorId}`),
              h("span", { class: "hint" }, when(v.changedAt)),
              h("span", { class: "hint" }, v.change),
            ),
            h("ul", { class: "diff" }, lines.map((l) => h("li", { class: l[0] === "+" ? "add" : l[0] === "−" ? "del" : "mod" }, l))),
          );
        }),
      ),
    );
  }

  draw();
  await loadHistory();
}

/** Readable differences between two version snapshots, one line each ("+ …", "− …", "~ …"). */
export function diffSnapshots(a, b, collectionNames = {}) {
  const out = [];
  for (const key of ["name", "description", "active"]) {
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) out.push(`~ ${key}: ${JSON.stringify(a[key])} → ${JSON.stringify(b[key])}`);
  }
  for (const key of ["collectionIds", "documentIds"]) {
    const was = new Set(a.scope[key]);
    const now = new Set(b.scope[key]);
    const name = (x) => (key === "collectionIds" ? `collection ${collectionNames[x] || x}` : `document ${x}`);
    for (const x of now) if (!was.has(x)) out.push(`+ scope ${name(x)}`);
    for (const x of was) if (!now.has(x)) out.push(`− scope ${name(x)}`);
  }
  const label = {
    verifiedAnswers: (e) => `verified answer “${e.question}” → “${e.answer}”`,
    definitions: (e) => `definition “${e.term}”: ${e.definition}${e.aliases.length ? ` (also: ${e.aliases.join(", ")})` : ""}`,
    instructions: (e) => `instruction “${e.text}”`,
    requiredEvidence: (e) => `required evidence ${e.passageId || e.documentId}`,
  };
  for (const [key, text] of Object.entries(label)) {
    const was = new Map(a[key].map((e) => [e.id, e]));
    const now = new Map(b[key].map((e) => [e.id, e]));
    for (const [id, e] of now) if (!was.has(id)) out.push(`+ ${text(e)}`);
    for (const [id, e] of was) if (!now.has(id)) out.push(`− ${text(e)}`);
    const kept = (list, other) => list.filter((e) => other.has(e.id)).map((e) => e.id).join();
    if (kept(a[key], now) !== kept(b[key], was)) out.push(`~ ${key} reordered`);
  }
  return out.length ? out : ["no visible change"];
}

/** A dialog to pick a document (its current version) or one of its passages. */
function pickEvidence(collections, preferred) {
  return new Promise((resolve) => {
    const coll = h("select", {}, collections.map((c) => h("option", { value: c.id, selected: preferred.includes(c.id) }, c.name)));
    const doc = h("select", {});
    const passages = h("ol", { class: "passages pick", "aria-label": "Passages of the current version" });
    const cancel = button("Cancel", () => dlg.close());
    const wholeBtn = button("Use the whole document", () => done({ documentId: doc.value, passageId: null }), "secondary");
    let result = null;
    const done = (value) => {
      result = value;
      dlg.close();
    };
    const dlg = h(
      "dialog",
      { class: "wide", "aria-label": "Pick evidence" },
      h("h2", {}, "Pick evidence"),
      h("div", { class: "row" }, field("Collection", coll), field("Document", doc)),
      passages,
      h("div", { class: "actions" }, cancel, wholeBtn),
    );
    async function loadDocs() {
      doc.replaceChildren();
      if (!coll.value) return;
      const docs = (await gql(DOCS, { c: coll.value })).documents.documents;
      docs.forEach((d) => doc.append(h("option", { value: d.id }, d.title || d.externalId)));
      await loadPassages();
    }
    async function loadPassages() {
      passages.replaceChildren();
      wholeBtn.disabled = !doc.value;
      if (!doc.value) return;
      const d = (await gql(DOCUMENT, { id: doc.value })).document;
      const v = d.versions.find((x) => x.id === d.currentVersionId) || d.versions.at(-1);
      for (const p of v.passages) {
        let text = "";
        try {
          text = splitByCodePoints(v.text, p.start, p.end).span;
        } catch {
          text = "";
        }
        passages.append(
          h(
            "li",
            { class: "passage" },
            h("p", {}, text.length > 300 ? `${text.slice(0, 300)}…` : text),
            button("Use this passage", () => done({ documentId: d.id, passageId: p.passageId }), "secondary small", {
              "aria-label": `Use passage ${p.ordinal}`,
            }),
          ),
        );
      }
    }
    coll.addEventListener("change", () => loadDocs().catch(() => {}));
    doc.addEventListener("change", () => loadPassages().catch(() => {}));
    dlg.addEventListener("close", () => {
      dlg.remove();
      resolve(result);
    });
    document.body.append(dlg);
    dlg.showModal();
    loadDocs().catch((err) => passages.replaceChildren(h("li", { class: "status error" }, errorText(err))));
  });
}

/** "Try it": a set-first pack with this set, and why each entry joined. */
function tryPanel(set) {
  const task = h("textarea", { rows: 2, maxlength: 4000, required: true });
  const out = h("div", { class: "try-results" });
  const status = statusLine();
  const form = h(
    "form",
    { class: "card", "aria-label": "Try the set" },
    h("h2", {}, "Try it"),
    field("Task", task, "A task or question as an agent would send it; the pack is built set-first with this set."),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Build pack")),
    status,
    out,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    status.show("Building…");
    try {
      const t = task.value.trim();
      const r = await gql(TRY, {
        i: { task: t, contextSetId: set.id, budget: { maxTokens: 1200 } },
        q: t.slice(0, 1000),
        t: t.slice(0, 200),
        s: set.id,
      });
      const answers = new Map(r.matchVerifiedAnswers.map((m) => [m.verifiedAnswer.id, m]));
      const defs = new Map(r.lookupDefinitions.map((m) => [m.definition.id, m]));
      status.show(`Pack ${r.contextPack.packId}: ${r.contextPack.items.length} items.`, "ok");
      fill(
        out,
        h(
          "ol",
          { class: "items try" },
          r.contextPack.items.map((it) => {
            const entry = it.contextSetEntry;
            let why = "retrieved evidence (BM25 + dense)";
            if (it.kind === "VERIFIED_ANSWER" && entry && answers.has(entry.entryId)) {
              const m = answers.get(entry.entryId);
              why = `coverage ${(m.coverage * 100).toFixed(0)} % · matched: ${m.matchedWords.join(", ")}`;
            } else if (it.kind === "DEFINITION" && entry && defs.has(entry.entryId)) {
              const m = defs.get(entry.entryId);
              why = `term score ${m.score.toFixed(2)} · matched: ${m.matchedWords.join(", ")}`;
            } else if (it.kind === "INSTRUCTION") why = "instructions always join";
            else if (it.kind === "REQUIRED_EVIDENCE") why = "required evidence always joins";
            return h(
              "li",
              { class: "card try-item", dataset: { kind: it.kind } },
              h("div", { class: "item-head" }, h("span", { class: "rank" }, `#${it.rank}`), badge(it.kind), h("span", { class: "title" }, it.documentTitle)),
              h("div", { class: "hint why" }, why),
              h("p", { class: "item-text" }, it.text.length > 280 ? `${it.text.slice(0, 280)}…` : it.text),
            );
          }),
        ),
        r.contextPack.notes.length ? h("ul", { class: "notes" }, r.contextPack.notes.map((n) => h("li", {}, n))) : null,
      );
    } catch (err) {
      status.show(errorText(err), "error");
    }
  });
  return form;
}
