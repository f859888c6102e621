// Settings → Agent access (owners and admins): credentials, responsibility profiles, and
// (owners) the workspace's memory switch, retention and delete-all.
import { gql } from "./api.js";
import { badge, confirmDialog, copyButton, errorText, field, h, statusLine, when } from "./ui.js";

const CRED_FIELDS = `id name creatorId scopes createdAt expiresAt revokedAt lastUsedAt status lostScopes
  profile { grantedCapabilities naturalAvoidances suggestOnly reconfirmBefore hardBoundaries }`;
const LOAD = `{ agentCredentials { ${CRED_FIELDS} } members { id name role }
  agentScopes { name default permissions minimumRole } operations { capability } }`;
const SETS = `query { contextSets(limit: 50) { id name } }`;
const CREATE = `mutation($i: CreateAgentCredentialInput!) { createAgentCredential(input: $i) { token credential { id } } }`;
const REVOKE = `mutation($id: ID!) { revokeAgentCredential(id: $id) { id status } }`;
const PROFILE = `mutation($id: ID!, $p: ResponsibilityProfileInput!) { setAgentProfile(id: $id, profile: $p) { id } }`;
const SETTINGS = `{ memorySettings { enabled retentionDays retaining } }`;
const SET_SETTINGS = `mutation($e: Boolean, $d: Int) { setMemorySettings(enabled: $e, retentionDays: $d) { enabled retentionDays } }`;
const DELETE_ALL = `mutation { deleteAllMemories { deleted } }`;

const LISTS = [
  ["grantedCapabilities", "Granted", "what it may do at all"],
  ["naturalAvoidances", "Avoid", "refused unless confirmed (AVOID)"],
  ["suggestOnly", "Suggest only", "it may propose, not do"],
  ["reconfirmBefore", "Reconfirm", "needs a confirmation token each time"],
  ["hardBoundaries", "Never", "always refused (BLOCKED)"],
];
const SCOPE_TEXT = {
  "context:read": "build context packs, read documents and collections",
  "queries:run": "run queries on its creator's behalf",
  "replay:run": "replay recorded packs",
  "gaps:report": "report knowledge gaps",
  "memory:read": "recall and list its creator's memories",
  "memory:write": "remember and forget notes for its creator",
  "decisions:run": "run structured decisions and agent sessions",
};
const STATUS = {
  ACTIVE: ["active", "ok"],
  EXPIRED: ["expired", "muted"],
  REVOKED: ["revoked", "bad"],
  AUTHORITY_LOST: ["authority lost", "warn"],
};

export async function render(root, ctx) {
  root.append(h("h1", {}, "Settings → Agent access"));
  if (!ctx.can("agent_credential:manage")) {
    root.append(
      h(
        "p",
        { class: "status info", role: "note" },
        `Agent access is managed by owners and admins; your role is ${ctx.viewer.role}. ` +
          "Ask an owner or admin to create or revoke agent credentials.",
      ),
    );
    return;
  }
  const status = statusLine();
  const credSection = h("section", { "aria-labelledby": "creds-title" });
  root.append(status, credSection);
  const state = { data: null };

  async function reload() {
    state.data = await gql(LOAD);
    drawCredentials();
  }

  // built once: a redraw of the table keeps the form or the one-time secret on screen
  const formSlot = h("div");
  const newBtn = h("button", { type: "button", class: "primary", disabled: true }, "New agent credential");
  newBtn.addEventListener("click", () => {
    formSlot.replaceChildren(createForm(state.data.agentScopes, formSlot));
    formSlot.querySelector("input").focus();
  });
  const tableWrap = h("div", { class: "table-wrap" });
  credSection.append(
    h("div", { class: "section-head" }, h("h2", { id: "creds-title" }, "Agent credentials"), newBtn),
    formSlot,
    tableWrap,
  );

  function drawCredentials() {
    const { agentCredentials, members } = state.data;
    newBtn.disabled = false; // the scopes it offers are loaded now
    const names = Object.fromEntries(members.map((m) => [m.id, m.name]));
    const rows = agentCredentials.map((c) => {
      const [label, kind] = STATUS[c.status] || [c.status, ""];
      const actions = h("div", { class: "row-actions" });
      const profileBtn = h("button", { type: "button", class: "secondary" }, "Profile");
      profileBtn.setAttribute("aria-label", `Responsibility profile of ${c.name}`);
      profileBtn.addEventListener("click", () => editProfile(c));
      actions.append(profileBtn);
      if (c.status !== "REVOKED") {
        const revokeBtn = h("button", { type: "button", class: "danger" }, "Revoke");
        revokeBtn.setAttribute("aria-label", `Revoke ${c.name}`);
        revokeBtn.addEventListener("click", () => revoke(c));
        actions.append(revokeBtn);
      }
      // data-label: below 700 px the table becomes one card per credential (console.css
      // table.stack), so Actions (Revoke) is never scrolled out of sight
      const cell = (label) => ({ dataset: { label } });
      return h(
        "tr",
        { dataset: { credential: c.id } },
        h("th", { scope: "row", ...cell("Name") }, c.name, h("div", { class: "hint mono" }, c.id)),
        h("td", cell("Scopes"), c.scopes.map((s) => h("span", { class: "scope" }, s))),
        h("td", cell("Created by"), names[c.creatorId] || c.creatorId),
        h("td", cell("Created"), when(c.createdAt)),
        h("td", cell("Expires"), when(c.expiresAt)),
        h("td", cell("Last used"), c.lastUsedAt ? when(c.lastUsedAt) : "never"),
        h(
          "td",
          cell("Status"),
          badge(label, kind),
          c.lostScopes.length ? h("div", { class: "hint" }, `lost: ${c.lostScopes.join(", ")}`) : null,
        ),
        h("td", cell("Actions"), actions),
      );
    });
    const table = agentCredentials.length
      ? h(
          "table",
          { class: "grid stack" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["Name", "Scopes", "Created by", "Created", "Expires", "Last used", "Status", "Actions"].map((t) =>
                h("th", { scope: "col" }, t),
              ),
            ),
          ),
          h("tbody", {}, rows),
        )
      : h("p", { class: "empty" }, "No agent credentials yet.");
    tableWrap.replaceChildren(table);
  }

  function createForm(scopes, slot) {
    const name = h("input", { type: "text", required: true, maxlength: 120, autocomplete: "off" });
    const days = h("input", { type: "number", min: 1, max: 365, step: 1, value: 30, required: true });
    const boxes = scopes.map((s) => {
      const box = h("input", { type: "checkbox", name: "scope", value: s.name, checked: s.default });
      const id = `scope-${s.name.replace(":", "-")}`;
      box.id = id;
      return h(
        "div",
        { class: "scope-option" },
        box,
        h(
          "label",
          { for: id },
          h("span", { class: "mono" }, s.name),
          ` — ${SCOPE_TEXT[s.name] || ""}`,
          h(
            "span",
            { class: "hint block" },
            `${s.default ? "On" : "Off"} by default. Its creator must be ${s.minimumRole} or higher ` +
              `(${s.permissions.join(", ")}), now and at every call; below that it fails with AUTHORITY_LOST.`,
          ),
        ),
      );
    });
    const setChoice = h("select", {}, h("option", { value: "" }, "None — reads every collection of the workspace"));
    gql(SETS)
      .then((d) => d.contextSets.forEach((cs) => setChoice.append(h("option", { value: cs.id }, cs.name))))
      .catch(() => {}); // the list is a convenience: creating still works unbound
    const status = statusLine();
    const form = h(
      "form",
      { class: "card", "aria-label": "New agent credential" },
      h("h3", {}, "New agent credential"),
      field("Name", name, "1–120 characters, e.g. support-bot."),
      field("Expires in (days)", days, "1–365 days."),
      h("fieldset", {}, h("legend", {}, "Scopes"), boxes),
      field(
        "Bound context set",
        setChoice,
        "Optional. Every read of a bound credential stays inside the set's scope (AGENT_CONTEXT_SET_SCOPE_REFUSED " +
          "outside it); deactivating the set stops the credential (active sets only).",
      ),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "secondary", on: { click: () => slot.replaceChildren() } }, "Cancel"),
        h("button", { type: "submit", class: "primary" }, "Create credential"),
      ),
      status,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const chosen = boxes.map((b) => b.querySelector("input")).filter((b) => b.checked).map((b) => b.value);
      status.show("Creating…");
      try {
        const out = await gql(CREATE, {
          i: {
            name: name.value.trim(),
            expiresInDays: Number(days.value),
            scopes: chosen,
            ...(setChoice.value ? { contextSetId: setChoice.value } : {}),
          },
        });
        slot.replaceChildren(secretPanel(out.createAgentCredential.token, name.value.trim(), slot));
        await reload();
        slot.querySelector("input").focus();
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    return form;
  }

  function secretPanel(token, name, slot) {
    const input = h("input", { type: "text", readonly: true, value: token, class: "mono secret", spellcheck: "false" });
    input.addEventListener("focus", () => input.select());
    return h(
      "div",
      { class: "card secret-panel", role: "region", "aria-label": "New credential secret" },
      h("h3", {}, `Credential “${name}” created`),
      h("p", { class: "status info" }, "Copy the secret now: it is shown once and never again. Use it from a server, never a browser."),
      field("Secret", input),
      h(
        "div",
        { class: "actions" },
        copyButton(() => token, "Copy secret"),
        h("button", { type: "button", class: "primary", on: { click: () => slot.replaceChildren() } }, "Done"),
      ),
    );
  }

  async function revoke(c) {
    const ok = await confirmDialog({
      title: `Revoke “${c.name}”?`,
      body: "Its next call is refused (AGENT_CREDENTIAL_REVOKED). This cannot be undone.",
      confirm: "Revoke",
    });
    if (!ok) return;
    try {
      await gql(REVOKE, { id: c.id });
      status.show(`Revoked “${c.name}”.`, "ok");
      await reload();
    } catch (err) {
      status.show(errorText(err), "error");
    }
  }

  function editProfile(c) {
    const caps = new Set(["*"]);
    for (const op of state.data.operations) caps.add(op.capability);
    for (const [key] of LISTS) for (const v of c.profile[key]) caps.add(v);
    const sorted = [...caps].sort((a, b) => (a === "*" ? -1 : b === "*" ? 1 : a.localeCompare(b)));
    const boxes = {};
    const body = sorted.map((cap) =>
      h(
        "tr",
        {},
        h("th", { scope: "row", class: "mono" }, cap),
        LISTS.map(([key, label]) => {
          const box = h("input", { type: "checkbox", checked: c.profile[key].includes(cap) });
          box.setAttribute("aria-label", `${label}: ${cap}`);
          (boxes[key] ||= []).push([cap, box]);
          return h("td", { class: "center" }, box);
        }),
      ),
    );
    const status = statusLine();
    const save = h("button", { type: "submit", class: "primary" }, "Save profile");
    const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
    const form = h(
      "form",
      { method: "dialog" },
      h("h2", {}, `Responsibility profile of “${c.name}”`),
      h("p", { class: "hint" }, "Capabilities come from the operations registry; '*' means every capability."),
      h(
        "div",
        { class: "table-wrap tall" },
        h(
          "table",
          { class: "grid matrix" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Capability"),
              LISTS.map(([key, label, hint]) => h("th", { scope: "col", title: `${key}: ${hint}` }, label)),
            ),
          ),
          h("tbody", {}, body),
        ),
      ),
      status,
      h("div", { class: "actions" }, cancel, save),
    );
    const dlg = h("dialog", { class: "wide", "aria-label": `Responsibility profile of ${c.name}` }, form);
    cancel.addEventListener("click", () => dlg.close());
    dlg.addEventListener("close", () => dlg.remove());
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const profile = {};
      for (const [key] of LISTS) profile[key] = boxes[key].filter(([, b]) => b.checked).map(([cap]) => cap);
      status.show("Saving…");
      try {
        await gql(PROFILE, { id: c.id, p: profile });
        dlg.close();
        status.show("");
        await reload();
      } catch (err) {
        status.show(errorText(err), "error");
      }
    });
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  }

  await reload();
  root.append(await memorySection(ctx));
}

async function memorySection(ctx) {
  const section = h("section", { "aria-labelledby": "mem-title" }, h("h2", { id: "mem-title" }, "Agent memory"));
  if (!ctx.can("ask_history:manage")) {
    section.append(
      h(
        "p",
        { class: "status info", role: "note" },
        "The memory switch, retention and deleting every memory are the owner's settings.",
      ),
    );
    return section;
  }
  const status = statusLine();
  const s = (await gql(SETTINGS)).memorySettings;
  const enabled = h("input", { type: "checkbox", role: "switch", checked: s.enabled, id: "mem-enabled" });
  const days = h("input", { type: "number", min: 1, max: 365, step: 1, value: s.retentionDays, required: true });
  const form = h(
    "form",
    { class: "card", "aria-label": "Memory settings" },
    h(
      "div",
      { class: "switch" },
      enabled,
      h("label", { for: "mem-enabled" }, "Let agents keep memories (for the member who created each agent)"),
    ),
    field("Retention (days)", days, "1–365. Older memory versions are deleted."),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save memory settings")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const out = (await gql(SET_SETTINGS, { e: enabled.checked, d: Number(days.value) })).setMemorySettings;
      status.show(`Memory is ${out.enabled ? "on" : "off"}; retention ${out.retentionDays} days.`, "ok");
    } catch (err) {
      status.show(errorText(err), "error");
    }
  });
  const deleteBtn = h("button", { type: "button", class: "danger" }, "Delete all memories…");
  deleteBtn.addEventListener("click", async () => {
    const ws = ctx.viewer.workspaceName;
    const ok = await confirmDialog({
      title: "Delete every memory of this workspace?",
      body: `Every agent memory of every member of “${ws}” is deleted without being read. This cannot be undone.`,
      confirm: "Delete all memories",
      typed: ws,
    });
    if (!ok) return;
    try {
      const n = (await gql(DELETE_ALL)).deleteAllMemories.deleted;
      status.show(`Deleted ${n} memory version${n === 1 ? "" : "s"}.`, "ok");
    } catch (err) {
      status.show(errorText(err), "error");
    }
  });
  section.append(
    form,
    h("div", { class: "card danger-zone" }, h("h3", {}, "Danger zone"), deleteBtn),
    status,
  );
  return section;
}
