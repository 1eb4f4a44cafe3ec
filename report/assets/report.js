// Clicking a legend entry hides or shows its series (every repeat of it).
document.querySelectorAll("svg.chart").forEach(function (svg) {
  svg.querySelectorAll(".legend[data-series]").forEach(function (g) {
    var first = svg.querySelector('path.series[data-series="' + g.dataset.series + '"]');
    if (!first) return;
    g.addEventListener("click", function () {
      var off = g.classList.toggle("off");
      svg.querySelectorAll("path.series").forEach(function (p) {
        if (p.dataset.name === first.dataset.name) p.classList.toggle("hidden", off);
      });
    });
  });
});
