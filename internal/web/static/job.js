// The job's page polls the job's status while it runs and writes the new
// figures into the elements marked data-live; when the state changes the
// page is loaded again, so its forms fit the new state.
(function () {
  "use strict";
  var root = document.getElementById("job");
  if (!root || root.dataset.final === "true") { return; }
  var every = parseInt(root.dataset.poll, 10) || 2000;
  var url = "/ui/jobs/" + encodeURIComponent(root.dataset.job) + "/status";
  var bar = document.getElementById("job-progress");
  function tick() {
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 401) { window.location.assign("/ui/signin"); throw new Error("signed out"); }
        if (!r.ok) { throw new Error(r.status); }
        return r.json();
      })
      .then(function (s) {
        if (s.state !== root.dataset.state) { window.location.reload(); return; }
        Object.keys(s.fields).forEach(function (k) {
          document.querySelectorAll('[data-live="' + k + '"]').forEach(function (el) { el.textContent = s.fields[k]; });
        });
        if (bar) { bar.value = s.progress; }
        setTimeout(tick, every);
      })
      .catch(function () { setTimeout(tick, every * 2); });
  }
  setTimeout(tick, every);
})();
