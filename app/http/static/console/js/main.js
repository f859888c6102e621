// The console's shell: sign-in with a member token, the header (workspace, member, role,
// sign-out), the page tabs and a hash router (#/page or #/page/argument, e.g. #/documents/doc_1).
import { gql, session, whenSignedOut } from "./api.js";
import { errorText, field, h, statusLine } from "./ui.js";
import * as access from "./access.js";
import * as memory from "./memory.js";
import * as explorer from "./explorer.js";
import * as documents from "./documents.js";
import * as sets from "./sets.js";
import * as gaps from "./gaps.js";
import * as templates from "./templates.js";
import * as replays from "./replays.js";

const PAGES = { explorer, documents, sets, gaps, templates, replays, memory, access };
const main = document.getElementById("main");
const VIEWER = "{ viewer { kind id name workspaceName role permissions } }";

/** What every page gets: the viewer and a permission test. */
const ctx = {
  viewer: null,
  can(permission) {
    return Boolean(this.viewer && this.viewer.permissions.includes(permission));
  },
};

function signIn(message) {
  ctx.viewer = null;
  document.getElementById("topbar").hidden = true;
  document.getElementById("nav").hidden = true;
  document.title = "Sign in · Cairn console";
  const input = h("input", {
    type: "password",
    name: "token",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    placeholder: "cm_…",
  });
  const status = statusLine();
  if (message) status.show(message, "error");
  const form = h(
    "form",
    { class: "card signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "Sign in to the Cairn console"),
    h(
      "p",
      {},
      "Paste your member token (cm_…), printed by `cairn members add` or `cairn demo`. It stays in this tab's " +
        "session storage and is sent only to this server.",
    ),
    field("Member token", input, "Agent credentials (ck_…) are refused in browsers: sign in as a person."),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Sign in")),
    status,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (token.startsWith("ck_")) {
      status.show(
        "That is an agent credential. Cairn refuses agent credentials from browsers " +
          "(AGENT_BROWSER_REQUEST_REFUSED); sign in with a member token (cm_…).",
        "error",
      );
      return;
    }
    status.show("Signing in…");
    try {
      const data = await gql(VIEWER, {}, token);
      if (data.viewer.kind !== "member") throw new Error("only member tokens can sign in");
      session.set(token);
      ctx.viewer = data.viewer;
      showShell();
    } catch (err) {
      status.show(errorText(err), "error");
    }
  });
  main.replaceChildren(form);
  input.focus();
}

function signOut(message) {
  session.clear();
  history.replaceState(null, "", "#/");
  signIn(message);
}

function showShell() {
  const v = ctx.viewer;
  document.getElementById("workspace").textContent = v.workspaceName;
  document.getElementById("member").textContent = v.name;
  document.getElementById("role").textContent = v.role;
  document.getElementById("topbar").hidden = false;
  const nav = document.getElementById("nav");
  for (const a of nav.querySelectorAll("a[data-needs]")) a.hidden = !ctx.can(a.dataset.needs);
  nav.hidden = false;
  route();
}

let current = null;
async function route() {
  if (!ctx.viewer) return;
  const [, name, path, query] = location.hash.match(/^#\/(\w+)(?:\/([^?]*))?(\?.*)?$/) || [];
  const arg = `${path || ""}${query || ""}`;
  const page = PAGES[name] ? name : "explorer";
  if (current && current.leave) current.leave();
  current = PAGES[page];
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.page === page) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const container = h("div", { class: "page", dataset: { page } });
  main.replaceChildren(container);
  try {
    await current.render(container, ctx, arg || "");
  } catch (err) {
    container.append(h("div", { class: "status error", role: "alert" }, errorText(err)));
  }
}

document.getElementById("signout").addEventListener("click", () => signOut());
whenSignedOut((err) => signOut(`Signed out: ${errorText(err)}`));
window.addEventListener("hashchange", route);

async function boot() {
  const token = session.token;
  if (!token) return signIn();
  try {
    ctx.viewer = (await gql(VIEWER)).viewer;
    showShell();
  } catch (err) {
    signOut(errorText(err));
  }
}
boot();
