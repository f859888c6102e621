// Cairn's GraphiQL bootstrap (adapted from Strawberry's graphiql.html). Kept out of
// index.html so a Content-Security-Policy of script-src 'self' allows it.
//
// Queries and mutations: POST /graphql on this origin. Subscriptions: graphql-transport-ws
// at ws(s)://<this host>/graphql; GraphiQL sends the Headers tab's JSON (e.g.
// {"Authorization": "Bearer cm_..."}) as the connection_init payload, which Cairn reads as
// connection params.
(function () {
  "use strict";

  var DEFAULT_QUERY =
    "# Paste a query here. Set the Authorization header in\n" +
    "# the Headers tab (below) to your member token:\n" +
    "#\n" +
    '#   {"Authorization": "Bearer cm_..."}\n' +
    "#\n" +
    "# Run: Ctrl-Enter.  Autocomplete: Ctrl-Space.\n";

  // URL parameters for sharing a query: ?q=...&variables=... (never headers: a link must
  // not carry or plant a credential).
  var parameters = {};
  window.location.search
    .slice(1)
    .split("&")
    .forEach(function (entry) {
      var eq = entry.indexOf("=");
      if (eq >= 0) {
        parameters[decodeURIComponent(entry.slice(0, eq))] = decodeURIComponent(
          entry.slice(eq + 1),
        );
      }
    });

  function updateURL(data) {
    Object.assign(parameters, data);
    var search =
      "?" +
      ["q", "variables"]
        .filter(function (key) {
          return Boolean(parameters[key]);
        })
        .map(function (key) {
          return encodeURIComponent(key) + "=" + encodeURIComponent(parameters[key]);
        })
        .join("&");
    history.replaceState(null, "", search === "?" ? window.location.pathname : search);
  }

  var fetchURL = new URL("/graphql", window.location.href);
  fetchURL.search = "";
  fetchURL.hash = "";
  var subscriptionURL = new URL(fetchURL.toString());
  subscriptionURL.protocol = fetchURL.protocol === "https:" ? "wss:" : "ws:";

  var fetcher = GraphiQL.createFetcher({
    url: fetchURL.toString(),
    subscriptionUrl: subscriptionURL.toString(),
  });

  var explorerPlugin = GraphiQLPluginExplorer.explorerPlugin();

  function CairnGraphiQL() {
    var queryState = React.useState(parameters.q || DEFAULT_QUERY);
    var variablesState = React.useState(parameters.variables);

    return React.createElement(GraphiQL, {
      fetcher: fetcher,
      plugins: [explorerPlugin],
      query: queryState[0],
      variables: variablesState[0],
      onEditQuery: function (value) {
        queryState[1](value);
        updateURL({ q: value });
      },
      onEditVariables: function (value) {
        variablesState[1](value);
        updateURL({ variables: value });
      },
      // Open the tools pane on the Headers tab, where the token goes.
      defaultEditorToolsVisibility: "headers",
      isHeadersEditorEnabled: true,
      // Tokens stay out of localStorage: paste the member token per browser session.
      shouldPersistHeaders: false,
      inputValueDeprecation: true,
    });
  }

  ReactDOM.createRoot(document.getElementById("graphiql")).render(
    React.createElement(CairnGraphiQL),
  );
})();
