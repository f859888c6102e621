// Query templates of a context set: editors propose, admins approve after seeing the approval
// check's verdict; SQL is shown to members only (agents never see it). A test run takes typed
// parameter inputs (one per declaration) and shows the rows.
import { gql } from "./api.js";
import { badge, button, dataTable, errorText, field, fill, h, statusLine, when } from "./ui.js";

const SETS = "{ contextSets(limit: 50) { id name active } }";
const PARAM = "name type description required default minLength maxLength pattern min max values minItems maxItems";
const LIST = `query($s: ID) { queryTemplates(contextSetId: $s) { id name description version approved sql approvedBy approvedAt maxRows
  parameters { ${PARAM} items { ${PARAM} } } } }`;
const CREATE = "mutation($s: ID!, $i: QueryTemplateInput!) { createQueryTemplate(contextSetId: $s, input: $i) { id name } }";
const CHECK = "query($t: ID!) { checkQueryTemplate(templateId: $t) { version dialect passed violations } }";
const APPROVE = "mutation($t: ID!, $v: Int) { approveQueryTemplate(templateId: $t, version: $v) { id version approved } }";
const RUN = `query($t: ID!, $p: JSON) { runQueryTemplate(templateId: $t, parameters: $p) {
  columns { name type } rows rowCount truncated rowCap notices { code message } elapsedMs } }`;

export async function render(root, ctx) {
  root.append(h("h1", {}, "Query templates"));
  if (!ctx.can("agent:run")) {
    root.append(
      h("p", { class: "status info", role: "note" }, `Query templates are for editors and above; your role is ${ctx.viewer.role}.`),
    );
    return;
  }
  const canPropose = ctx.can("document:write");
  const canApprove = ctx.can("collection:write");
  const status = statusLine();
  const sets = (await gql(SETS)).contextSets;
  if (!sets.length) {
    root.append(h("p", { class: "empty" }, "Templates belong to a context set: create a set first."));
    return;
  }
  const setSel = h("select", {}, sets.map((s) => h("option", { value: s.id }, s.name)));
  const listSlot = h("div");
  const formSlot = h("div");
  root.append(
    h(
      "p",
      { class: "lead" },
      `Parameterised SELECTs agents may run. ${canPropose ? "Editors propose; " : ""}admins approve after the check. ` +
        "Agents see name, description and parameters — never the SQL.",
    ),
    h(
      "div",
      { class: "row toolbar" },
      field("Context set", setSel),
      canPropose
        ? h("div", { class: "actions" }, button("Propose a template", () => {
            formSlot.replaceChildren(proposeForm());
            formSlot.querySelector("input").focus();
          }, "primary"))
        : null,
    ),
    formSlot,
    status,
    listSlot,
  );
  setSel.addEventListener("change", () => load().catch((err) => status.show(errorText(err), "error")));

  async function load() {
    const list = (await gql(LIST, { s: setSel.value })).queryTemplates;
    fill(listSlot, list.length ? list.map(templateView) : h("p", { class: "empty" }, "No templates in this set yet."));
  }

  function proposeForm() {
    const name = h("input", { type: "text", required: true, maxlength: 64, pattern: "[a-z][a-z0-9_]{0,63}", autocomplete: "off" });
    const description = h("textarea", { rows: 2, maxlength: 1000 });
    const sql = h("textarea", { rows: 5, required: true, spellcheck: "false", class: "mono" });
    const params = h("textarea", { rows: 4, spellcheck: "false", class: "mono", placeholder: '[{"name": "country", "type": "string", "maxLength": 15}]' });
    const maxRows = h("input", { type: "number", min: 1, step: 1 });
    const st = statusLine();
    const form = h(
      "form",
      { class: "card", "aria-label": "Propose a template" },
      h("h2", {}, "Propose a template"),
      field("Name", name, "[a-z][a-z0-9_]{0,63}, unique in the set."),
      field("Description", description, "Shown to agents, ≤ 1,000 characters."),
      field("SQL", sql, "One SELECT with named :parameter placeholders (a list as `column IN :name`)."),
      field("Parameters (JSON)", params, "A list of declarations: name, type (string, integer, float, boolean, date, enum, list) and bounds."),
      field("Row cap", maxRows, "Optional; at most the server's cap."),
      h("div", { class: "actions" }, button("Cancel", () => formSlot.replaceChildren()), h("button", { type: "submit", class: "primary" }, "Propose")),
      st,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      let parameters = null;
      if (params.value.trim()) {
        try {
          parameters = JSON.parse(params.value);
        } catch (err) {
          st.show(`Parameters: not JSON (${err.message})`, "error");
          return;
        }
      }
      try {
        const input = { name: name.value.trim(), description: description.value, sql: sql.value, parameters };
        if (maxRows.value) input.maxRows = Number(maxRows.value);
        const t = (await gql(CREATE, { s: setSel.value, i: input })).createQueryTemplate;
        formSlot.replaceChildren();
        status.show(`Proposed “${t.name}”: an admin approves it after the check.`, "ok");
        await load();
      } catch (err) {
        st.show(errorText(err), "error");
      }
    });
    return form;
  }

  function templateView(t) {
    const verdict = h("div", { class: "verdict" });
    const runSlot = h("div");
    const st = statusLine();
    const check = async () => {
      const c = (await gql(CHECK, { t: t.id })).checkQueryTemplate;
      fill(
        verdict,
        h(
          "div",
          { class: `status ${c.passed ? "ok" : "error"}`, role: "status" },
          c.passed ? `Check passed for version ${c.version} (${c.dialect}).` : `Check failed for version ${c.version} (${c.dialect}):`,
          c.violations.length ? h("ul", {}, c.violations.map((v) => h("li", {}, v))) : null,
        ),
      );
      return c;
    };
    const actions = h("div", { class: "actions" });
    actions.append(button("Check", () => check().catch((err) => st.show(errorText(err), "error")), "secondary", { "aria-label": `Check ${t.name}` }));
    if (canApprove && !t.approved) {
      actions.append(
        button(`Review and approve v${t.version}`, async () => {
          try {
            const c = await check();
            if (!c.passed) return;
            const ok = button(`Approve version ${t.version}`, async () => {
              try {
                await gql(APPROVE, { t: t.id, v: t.version });
                status.show(`Approved “${t.name}” version ${t.version}.`, "ok");
                await load();
              } catch (err) {
                st.show(errorText(err), "error");
              }
            }, "primary");
            verdict.append(h("div", { class: "actions" }, ok));
            ok.focus();
          } catch (err) {
            st.show(errorText(err), "error");
          }
        }, "primary", { "aria-label": `Review and approve ${t.name}` }),
      );
    }
    if (t.approved) actions.append(button("Test run…", () => runSlot.replaceChildren(runForm(t)), "secondary", { "aria-label": `Test run ${t.name}` }));
    return h(
      "article",
      { class: "card template", dataset: { template: t.name } },
      h(
        "div",
        { class: "section-head" },
        h("h2", {}, t.name),
        h("span", {}, t.approved ? badge(`approved v${t.version}`, "ok") : badge(`proposed v${t.version} · not approved`, "warn")),
      ),
      t.description ? h("p", {}, t.description) : null,
      t.approved ? h("p", { class: "hint" }, `Approved ${when(t.approvedAt)} by ${t.approvedBy}.`) : null,
      t.parameters.length
        ? dataTable(
            `Parameters of ${t.name}`,
            ["Parameter", "Type", "Required", "Bounds"],
            t.parameters.map((p) => [{ th: h("span", { class: "mono" }, p.name) }, p.type.toLowerCase(), p.required ? "yes" : `no (default ${JSON.stringify(p.default)})`, bounds(p)]),
          )
        : h("p", { class: "hint" }, "No parameters."),
      t.sql !== null ? h("pre", { class: "code", tabindex: 0, "aria-label": `SQL of ${t.name}` }, t.sql) : null,
      actions,
      verdict,
      st,
      runSlot,
    );
  }

  function runForm(t) {
    const inputs = t.parameters.map((p) => [p, paramInput(p)]);
    const out = h("div");
    const st = statusLine();
    const form = h(
      "form",
      { class: "card inset", "aria-label": `Test run of ${t.name}` },
      inputs.map(([p, el]) => field(`${p.name} (${p.type.toLowerCase()})`, el, p.description || bounds(p))),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Run")),
      st,
      out,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const values = {};
      for (const [p, el] of inputs) {
        const v = readParam(p, el);
        if (v !== undefined) values[p.name] = v;
      }
      try {
        const r = (await gql(RUN, { t: t.id, p: values })).runQueryTemplate;
        st.show(`${r.rowCount} row${r.rowCount === 1 ? "" : "s"} in ${r.elapsedMs.toFixed(0)} ms${r.truncated ? ` (capped at ${r.rowCap})` : ""}.`, "ok");
        fill(
          out,
          r.rows.length
            ? dataTable(`Rows of ${t.name}`, r.columns.map((c) => c.name), r.rows.map((row) => r.columns.map((c) => (row[c.name] === null ? "—" : String(row[c.name])))))
            : h("p", { class: "empty" }, "No rows."),
          r.notices.length ? h("ul", { class: "notes" }, r.notices.map((n) => h("li", {}, `${n.code}: ${n.message}`))) : null,
        );
      } catch (err) {
        st.show(errorText(err), "error");
      }
    });
    return form;
  }

  await load();
}

function bounds(p) {
  const b = [];
  if (p.minLength !== null) b.push(`length ≥ ${p.minLength}`);
  if (p.maxLength !== null) b.push(`length ≤ ${p.maxLength}`);
  if (p.pattern) b.push(`pattern ${p.pattern}`);
  if (p.min !== null) b.push(`≥ ${p.min}`);
  if (p.max !== null) b.push(`≤ ${p.max}`);
  if (p.values) b.push(`one of ${p.values.join(", ")}`);
  if (p.minItems !== null) b.push(`≥ ${p.minItems} items`);
  if (p.maxItems !== null) b.push(`≤ ${p.maxItems} items`);
  if (p.items) b.push(`items: ${p.items.type.toLowerCase()}`);
  return b.join(" · ") || "—";
}

/** A typed control for one declaration (an empty optional value is left out: its default applies). */
function paramInput(p) {
  const dflt = p.default;
  switch (p.type) {
    case "INTEGER":
    case "FLOAT":
      return h("input", { type: "number", step: p.type === "INTEGER" ? 1 : "any", min: p.min ?? undefined, max: p.max ?? undefined, value: dflt ?? undefined, required: p.required });
    case "BOOLEAN":
      return h("select", {}, h("option", { value: "" }, "(default)"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    case "DATE":
      return h("input", { type: "date", min: p.min ?? undefined, max: p.max ?? undefined, value: dflt ?? undefined, required: p.required });
    case "ENUM":
      return h("select", {}, p.required ? null : h("option", { value: "" }, "(default)"), (p.values || []).map((v) => h("option", { value: v, selected: v === dflt }, v)));
    case "LIST":
      return h("input", { type: "text", placeholder: "comma-separated", value: Array.isArray(dflt) ? dflt.join(", ") : undefined, required: p.required });
    default:
      return h("input", { type: "text", maxlength: p.maxLength ?? undefined, value: dflt ?? undefined, required: p.required });
  }
}

function typed(type, raw) {
  if (type === "INTEGER") return Number.parseInt(raw, 10);
  if (type === "FLOAT") return Number(raw);
  if (type === "BOOLEAN") return raw === "true";
  return raw;
}

function readParam(p, el) {
  const raw = el.value.trim();
  if (raw === "") return undefined;
  if (p.type === "LIST") return raw.split(",").map((s) => typed(p.items ? p.items.type : "STRING", s.trim())).filter((v) => v !== "");
  return typed(p.type, raw);
}
