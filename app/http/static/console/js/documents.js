// Documents: collections and their documents (paged), upload into a collection (one request per
// file, progress per file, skip reasons shown), a document's versions with valid and system
// times, its passages, delete with confirmation. Viewers read only.
// #/documents?collection=<id> lists a collection; #/documents/<documentId>?passage=<id> opens a document.
import { gql, session } from "./api.js";
import { badge, button, confirmDialog, dataTable, errorText, field, fill, h, routeArg, statusLine, when } from "./ui.js";
import { splitByCodePoints } from "./spans.js";

const COLLECTIONS = "{ collections { id name documentCount createdAt } }";
const CREATE_COLLECTION = "mutation($n: String!) { createCollection(name: $n) { id name } }";
const DOCS = `query($c: ID!, $first: Int!, $after: String) { documents(collectionId: $c, first: $first, after: $after) {
  totalCount endCursor hasNextPage documents { id externalId title mediaType createdAt } } }`;
const DOCUMENT = `query($id: ID!) { document(id: $id) { id collectionId externalId title mediaType createdAt currentVersionId
  versions { id number text contentSha256 validFrom validTo recordedAt passages { passageId ordinal start end } } } }`;
const DELETE = "mutation($id: ID!) { deleteDocument(id: $id) { documentId deletedAt } }";
const PAGE_SIZE = 25;
const UPLOAD_URL = "/v1/documents";

export async function render(root, ctx, arg) {
  const { id, params } = routeArg(arg);
  if (id) return documentPage(root, ctx, id, params.get("passage"));
  return collectionsPage(root, ctx, params.get("collection"));
}

async function collectionsPage(root, ctx, chosen) {
  const canWrite = ctx.can("document:write");
  const status = statusLine();
  const collList = h("div");
  const listSlot = h("section", { "aria-label": "Documents of the collection" });
  const uploadSlot = h("div");
  root.append(
    h("h1", {}, "Documents"),
    h(
      "p",
      { class: "lead" },
      canWrite
        ? "Collections and their documents. Upload files into a collection; open a document for its versions and passages."
        : `Collections and their documents (read only: your role is ${ctx.viewer.role}).`,
    ),
    status,
    h("section", { "aria-labelledby": "colls-title" }, h("h2", { id: "colls-title" }, "Collections"), collList),
    uploadSlot,
    listSlot,
  );

  let collections = [];
  async function loadCollections() {
    collections = (await gql(COLLECTIONS)).collections;
    const rows = collections.map((c) => {
      const open = h("a", { href: `#/documents?collection=${encodeURIComponent(c.id)}` }, c.name);
      if (c.id === chosen) open.setAttribute("aria-current", "true");
      return [{ th: open }, String(c.documentCount), when(c.createdAt), h("span", { class: "mono" }, c.id)];
    });
    fill(
      collList,
      collections.length
        ? dataTable("Collections", ["Collection", "Documents", "Created", "Id"], rows)
        : h("p", { class: "empty" }, "No collections yet."),
      ctx.can("collection:write") ? newCollectionForm() : null,
    );
  }

  function newCollectionForm() {
    const name = h("input", { type: "text", required: true, maxlength: 120, autocomplete: "off" });
    const form = h(
      "form",
      { class: "card row", "aria-label": "New collection" },
      field("New collection name", name),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "secondary" }, "Create collection")),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        const c = (await gql(CREATE_COLLECTION, { n: name.value.trim() })).createCollection;
        status.show(`Created collection “${c.name}”.`, "ok");
        location.hash = `#/documents?collection=${encodeURIComponent(c.id)}`;
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    return form;
  }

  await loadCollections();
  if (!chosen && collections.length) chosen = collections[0].id;
  const coll = collections.find((c) => c.id === chosen);
  if (!coll) return;
  const refresh = async () => {
    await loadCollections(); // the document counts
    await listDocuments(coll, listSlot, [], null);
  };
  if (canWrite) uploadSlot.append(uploadPanel(coll, refresh));
  await listDocuments(coll, listSlot, [], null);
}

async function listDocuments(coll, slot, previous, after) {
  const data = (await gql(DOCS, { c: coll.id, first: PAGE_SIZE, after })).documents;
  const rows = data.documents.map((d) => [
    { th: h("a", { href: `#/documents/${encodeURIComponent(d.id)}` }, d.title || d.externalId) },
    h("span", { class: "mono" }, d.externalId),
    d.mediaType,
    when(d.createdAt),
  ]);
  const prev = button("Previous page", () => listDocuments(coll, slot, previous.slice(0, -1), previous.at(-1) ?? null));
  prev.disabled = previous.length === 0 && after === null;
  const next = button("Next page", () => listDocuments(coll, slot, [...previous, after], data.endCursor));
  next.disabled = !data.hasNextPage;
  const shownFrom = previous.length * PAGE_SIZE + (after === null ? 0 : PAGE_SIZE);
  fill(
    slot,
    h("h2", {}, `Documents of “${coll.name}”`),
    h(
      "p",
      { class: "hint" },
      data.totalCount
        ? `${shownFrom + 1}–${shownFrom + data.documents.length} of ${data.totalCount}, by external id.`
        : "No documents yet.",
    ),
    data.documents.length ? dataTable("Documents", ["Title", "External id", "Type", "Created"], rows) : null,
    h("div", { class: "actions" }, prev, next),
  );
}

/** The upload panel: files into `coll`, one POST /v1/documents per file (progress per file). */
function uploadPanel(coll, refresh) {
  const files = h("input", { type: "file", multiple: true });
  const externalId = h("input", { type: "text", maxlength: 512, autocomplete: "off", disabled: true });
  const list = h("ul", { class: "uploads", "aria-label": "Uploads", "aria-live": "polite" });
  const go = h("button", { type: "submit", class: "primary", disabled: true }, "Upload");
  files.addEventListener("change", () => {
    externalId.disabled = files.files.length !== 1;
    if (externalId.disabled) externalId.value = "";
    go.disabled = files.files.length === 0;
  });
  const form = h(
    "form",
    { class: "card upload-form", "aria-label": "Upload files" },
    h("h2", {}, `Upload into “${coll.name}”`),
    field("Files", files, "Text, Markdown, HTML, PDF… Each file is one document; a file already there unchanged is skipped."),
    field("External id (one file only)", externalId, "Optional. Default: the file's name."),
    h("div", { class: "actions" }, go),
    list,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const chosen = [...files.files];
    go.disabled = true;
    list.replaceChildren();
    const ext = externalId.value.trim();
    let changed = 0;
    for (const file of chosen) {
      const result = await uploadOne(coll.id, file, chosen.length === 1 ? ext : "", list);
      if (result && result.status === "ingested") changed += 1;
    }
    go.disabled = false;
    if (changed) await refresh();
  });
  return form;
}

function uploadOne(collectionId, file, externalId, list) {
  const bar = h("progress", { max: 100, value: 0, "aria-label": `Upload progress of ${file.name}` });
  const state = h("span", { class: "upload-state" }, "waiting");
  const li = h("li", { class: "upload", dataset: { file: file.name } }, h("span", { class: "title" }, file.name), bar, state);
  list.append(li);
  const body = new FormData();
  body.append("collection", collectionId);
  body.append("file", file, file.name);
  if (externalId) body.append("externalId", externalId);
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", UPLOAD_URL);
    xhr.setRequestHeader("authorization", `Bearer ${session.token}`);
    xhr.responseType = "json";
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) bar.value = Math.round((100 * e.loaded) / e.total);
      state.textContent = "uploading…";
    });
    xhr.addEventListener("load", () => {
      bar.value = 100;
      const out = xhr.response;
      if (xhr.status === 200 && out && out.results && out.results.length) {
        const r = out.results[0];
        const kind = r.status === "ingested" ? "ok" : r.status === "unchanged" ? "muted" : "warn";
        fill(
          state,
          badge(r.status, kind),
          r.documentId
            ? h(
                "a",
                { href: `#/documents/${encodeURIComponent(r.documentId)}`, title: r.version || "" },
                ` ${r.externalId || r.fileName}${r.status === "ingested" ? ` · ${r.passages ?? 0} passage${r.passages === 1 ? "" : "s"}` : ""}`,
              )
            : null,
          r.reason ? h("span", { class: "hint" }, ` ${r.reason}`) : null,
        );
        li.dataset.status = r.status;
        resolve(r);
      } else {
        const e = out && out.errors && out.errors[0];
        const text = e ? `${e.message} (${(e.extensions && e.extensions.code) || xhr.status})` : `HTTP ${xhr.status}`;
        fill(state, badge("failed", "bad"), h("span", { class: "hint" }, ` ${text}`));
        li.dataset.status = "failed";
        resolve(null);
      }
    });
    xhr.addEventListener("error", () => {
      fill(state, badge("failed", "bad"), h("span", { class: "hint" }, " the server cannot be reached"));
      li.dataset.status = "failed";
      resolve(null);
    });
    xhr.send(body);
  });
}

async function documentPage(root, ctx, id, passageId) {
  const status = statusLine();
  root.append(h("p", {}, h("a", { href: "#/documents" }, "← Documents")), status);
  let doc;
  try {
    doc = (await gql(DOCUMENT, { id })).document;
  } catch (err) {
    root.append(h("h1", {}, "Document"), h("div", { class: "status error", role: "alert" }, errorText(err)));
    return;
  }
  const versions = [...doc.versions].sort((a, b) => b.number - a.number);
  const collName = ((await gql(COLLECTIONS)).collections.find((c) => c.id === doc.collectionId) || {}).name || doc.collectionId;
  const del = ctx.can("document:write")
    ? button(
        "Delete document…",
        async () => {
          const ok = await confirmDialog({
            title: `Delete “${doc.title || doc.externalId}”?`,
            body:
              "It leaves packs and search at once (recorded at the current system time; its history stays for " +
              "reads as of an earlier time). Uploading it again creates it anew.",
            confirm: "Delete document",
          });
          if (!ok) return;
          try {
            const out = (await gql(DELETE, { id: doc.id })).deleteDocument;
            status.show(`Deleted at ${when(out.deletedAt)}.`, "ok");
            del.disabled = true;
          } catch (err) {
            status.show(errorText(err), "error");
          }
        },
        "danger",
      )
    : null;
  root.append(
    h("div", { class: "section-head" }, h("h1", {}, doc.title || doc.externalId), del),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Document"), h("dd", { class: "mono" }, doc.id),
      h("dt", {}, "External id"), h("dd", { class: "mono" }, doc.externalId),
      h("dt", {}, "Collection"), h("dd", {}, h("a", { href: `#/documents?collection=${encodeURIComponent(doc.collectionId)}` }, collName)),
      h("dt", {}, "Type"), h("dd", {}, doc.mediaType),
      h("dt", {}, "Created"), h("dd", {}, when(doc.createdAt)),
    ),
    h("h2", {}, `Versions (${versions.length})`),
    h(
      "p",
      { class: "hint" },
      "Valid time: when the content is true in the world. System time (recorded): when Cairn learned it.",
    ),
    dataTable(
      "Versions",
      ["Version", "Valid from", "Valid to", "Recorded (system time)", "Passages", "SHA-256"],
      versions.map((v) => [
        { th: `${v.number}${v.id === doc.currentVersionId ? " (current)" : ""}` },
        when(v.validFrom),
        v.validTo ? when(v.validTo) : "open",
        when(v.recordedAt),
        String(v.passages.length),
        h("span", { class: "mono" }, `${v.contentSha256.slice(0, 12)}…`),
      ]),
    ),
    ...versions.map((v) => versionView(v, v.id === doc.currentVersionId || v.passages.some((p) => p.passageId === passageId), passageId)),
  );
  const marked = root.querySelector("mark.cited");
  if (marked) marked.scrollIntoView({ block: "center" });
}

function versionView(v, open, passageId) {
  const passages = v.passages.map((p) => {
    let text;
    try {
      text = splitByCodePoints(v.text, p.start, p.end).span;
    } catch {
      text = "";
    }
    const isCited = p.passageId === passageId;
    return h(
      "li",
      { class: "passage", id: `passage-${p.passageId}`, dataset: { passage: p.passageId } },
      h(
        "div",
        { class: "item-meta" },
        h("span", {}, `#${p.ordinal}`),
        h("span", { class: "mono" }, p.passageId),
        h("span", {}, `[${p.start}, ${p.end})`),
      ),
      isCited ? h("mark", { class: "cited" }, text) : h("span", {}, text),
    );
  });
  return h(
    "details",
    { class: "card version", open },
    h("summary", {}, `Version ${v.number} — ${v.passages.length} passage${v.passages.length === 1 ? "" : "s"}`),
    h("ol", { class: "passages", "aria-label": `Passages of version ${v.number}` }, passages),
  );
}
