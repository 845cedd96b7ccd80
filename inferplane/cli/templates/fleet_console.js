// The fleet console's script (served by `inferplane serve` at /console/fleet.js; see
// inferplane/apiserver/console.py): it keeps the fleet page open in the browser up to date. It watches
// the console's read endpoint from the version the page was rendered at, list again on 410, and
// applies what changed once per animation frame however many changes came in meanwhile (a re-apply of
// a thousand clusters is a few repaints, not a thousand). Markup it inserts is the server's, rendered
// from the page's own template and autoescaped; card texts are set as text.
(function () {
  "use strict";
  var fleet = window.inferplaneFleet, live = document.getElementById("live");
  var version = live.dataset.resourceVersion;
  var sections = {}, clusters = {}, relisted = null, scheduled = false;
  var retries = 0, lastHeard = 0, controller = null, updated = null;
  // Seen by the tests and the bench: frames that applied changes, and changes received.
  var stats = window.inferplaneConsole = {frames: 0, changes: 0, lists: 0, version: version, applied: 0};
  var SINGLE = {"summary": "p.summary", "state-time": "#state-time", "clusters-heading": "#clusters"};

  function say(text, state) {
    live.textContent = text;
    live.className = "meta " + state;
    live.dataset.state = state;
  }
  function clock(date) { return date.toTimeString().slice(0, 8); }
  function fragment(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    return t.content;
  }
  function replaceSection(id, html) {
    if (SINGLE[id]) {
      var old = document.querySelector(SINGLE[id]);
      if (old) { old.replaceWith(fragment(html)); }
      return;
    }
    // A section: its heading and what follows it up to the next heading.
    var heading = document.getElementById(id), next;
    if (!heading) { return; }
    while ((next = heading.nextElementSibling) && next.tagName !== "H2") { next.remove(); }
    heading.replaceWith(fragment(html));
  }
  function position(name) {  // where a cluster's row goes: the rows are in name order
    var low = 0, high = fleet.rows.length;
    while (low < high) {
      var mid = (low + high) >> 1;
      if (fleet.rows[mid].row.id.slice(2) < name) { low = mid + 1; } else { high = mid; }
    }
    return low;
  }
  function setCluster(name, change) {
    var at = position(name), r = fleet.rows[at];
    var exists = r && r.row.id.slice(2) === name, opened = exists && r.opened !== null;
    if (exists) {
      fleet.show(r, false);
      if (change === null) { r.row.remove(); fleet.rows.splice(at, 1); return; }
    } else if (change === null) { return; }
    var row = fragment(change[0]).firstElementChild, entry = fleet.entry(row, change[1]);
    if (exists) {
      r.row.replaceWith(row);
      fleet.rows[at] = entry;
    } else {
      var before = fleet.rows[at];
      if (before) { before.row.before(row); } else { document.querySelector("#cluster-table > tbody").appendChild(row); }
      fleet.rows.splice(at, 0, entry);
    }
    if (opened) { fleet.show(entry, true); }
  }
  function apply() {
    scheduled = false;
    stats.frames += 1;
    if (relisted) {  // a list: rows it does not name are gone
      fleet.rows.slice().forEach(function (r) {
        var name = r.row.id.slice(2);
        if (!(name in relisted)) { setCluster(name, null); }
      });
      relisted = null;
    }
    Object.keys(sections).forEach(function (id) { replaceSection(id, sections[id]); });
    Object.keys(clusters).forEach(function (name) { setCluster(name, clusters[name]); });
    sections = {};
    clusters = {};
    fleet.filter();
    updated = new Date();
    stats.applied = performance.now();
    say("Live: up to date (last change " + clock(updated) + ")", "live");
  }
  function take(change) {
    stats.changes += 1;
    Object.keys(change.sections || {}).forEach(function (id) { sections[id] = change.sections[id]; });
    (change.clusters || []).forEach(function (c) { clusters[c[0]] = [c[1], c[2]]; });
    (change.removed || []).forEach(function (name) { clusters[name] = null; });
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(apply);
    }
  }
  function relist() {
    stats.lists += 1;
    return fetch("fleet", {credentials: "same-origin", cache: "no-store"}).then(function (response) {
      if (!response.ok) { throw response; }
      return response.json();
    }).then(function (list) {
      version = stats.version = list.resourceVersion;
      relisted = {};
      list.clusters.forEach(function (c) { relisted[c[0]] = true; });
      take({sections: list.sections, clusters: list.clusters});
    });
  }
  function event(line) {
    var e = JSON.parse(line);
    if (e.type === "ERROR") { throw {status: e.object && e.object.code}; }
    version = stats.version = e.resourceVersion;
    if (e.type === "MODIFIED") { take(e.object); }
  }
  function watch() {
    controller = new AbortController();
    lastHeard = Date.now();
    var url = "fleet?watch=1&resourceVersion=" + encodeURIComponent(version);
    return fetch(url, {credentials: "same-origin", cache: "no-store", signal: controller.signal}).then(function (response) {
      if (!response.ok) { throw response; }
      retries = 0;
      say(updated ? "Live: up to date (last change " + clock(updated) + ")" : "Live: up to date", "live");
      var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
      function read() {
        return reader.read().then(function (part) {
          if (part.done) { return; }  // the watch's lifetime ended: watch again
          lastHeard = Date.now();
          buffer += decoder.decode(part.value, {stream: true});
          var lines = buffer.split("\n");
          buffer = lines.pop();
          lines.forEach(function (line) { if (line) { event(line); } });
          return read();
        });
      }
      return read();
    });
  }
  function follow() {
    watch().then(follow, function (failure) {
      controller.abort();
      if (failure && failure.status === 401) {
        say("Session ended: this page no longer updates. Get a new link with `inferplane serve --console-url`.", "lost");
        return;
      }
      if (failure && failure.status === 410) {  // too far behind (or the server restarted): list again
        relist().then(follow, lost);
        return;
      }
      lost(failure);
    });
  }
  function lost() {
    retries += 1;
    var wait = Math.min(1000 * Math.pow(2, retries - 1), 10000);
    say("Connection lost at " + clock(new Date()) + ": reconnecting in " + Math.round(wait / 1000) + " s…", "lost");
    setTimeout(follow, wait);
  }
  // The server sends a bookmark each second while nothing changes: a longer silence is a connection lost.
  setInterval(function () {
    if (controller && Date.now() - lastHeard > 5000) { controller.abort(); lastHeard = Date.now(); }
  }, 1000);
  follow();
})();
