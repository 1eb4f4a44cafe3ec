// Clicking a legend entry hides or shows its series (every repeat of it).
document.querySelectorAll("svg.chart").forEach(function (svg) {
  svg.querySelectorAll(".legend[data-series]").forEach(function (g) {
    var first = svg.querySelector('path.series[data-series="' + g.dataset.series + '"]');
    if (!first) return;
    g.addEventListener("click", function () {
      var off = g.classList.toggle("off");
      svg.querySelectorAll("path.series, path.band").forEach(function (p) {
        if (p.dataset.name === first.dataset.name) p.classList.toggle("hidden", off);
      });
    });
  });
});
// Hover read-out: the pointer's position and the nearest point of a shown
// line, in the chart's units (the scales are the svg's data-sx and data-sy).
document.querySelectorAll("svg.chart[data-sx]").forEach(function (svg) {
  function scale(attr) {
    var f = attr.split(",").map(Number);
    return function (p) {
      var v = f[0] + (p - f[2]) / (f[3] - f[2]) * (f[1] - f[0]);
      if (f[4]) v = Math.pow(10, v);
      if (f[5]) v = 100 * (1 - Math.pow(10, -v));
      return v;
    };
  }
  var sx = scale(svg.dataset.sx), sy = scale(svg.dataset.sy);
  var ns = svg.namespaceURI;
  var box = document.createElementNS(ns, "text");
  box.setAttribute("class", "readout");
  box.setAttribute("x", 64);
  box.setAttribute("y", 32);
  svg.appendChild(box);
  var dot = document.createElementNS(ns, "circle");
  dot.setAttribute("r", 3.5);
  dot.setAttribute("class", "readout-dot");
  svg.appendChild(dot);
  var pts = [];
  svg.querySelectorAll("path.series").forEach(function (p) {
    var xy = [], re = /([MLHV])([-\d.]+)(?:[ ,]([-\d.]+))?/g, m, x = 0, y = 0;
    while ((m = re.exec(p.getAttribute("d")))) {
      if (m[1] === "H") x = +m[2];
      else if (m[1] === "V") y = +m[2];
      else { x = +m[2]; y = +m[3]; }
      xy.push([x, y]);
    }
    pts.push({ path: p, xy: xy });
  });
  function fmt(v) {
    var a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(3);
  }
  svg.addEventListener("mousemove", function (ev) {
    var ctm = svg.getScreenCTM();
    if (!ctm) return;
    var pt = svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    var p = pt.matrixTransform(ctm.inverse());
    var best = null, bd = Infinity;
    pts.forEach(function (s) {
      if (s.path.classList.contains("hidden")) return;
      s.xy.forEach(function (q) {
        var d = (q[0] - p.x) * (q[0] - p.x) + (q[1] - p.y) * (q[1] - p.y);
        if (d < bd) { bd = d; best = { s: s, q: q }; }
      });
    });
    if (best && bd < 900) {
      box.textContent = best.s.path.dataset.name + ": x " + fmt(sx(best.q[0])) + ", y " + fmt(sy(best.q[1]));
      dot.setAttribute("cx", best.q[0]); dot.setAttribute("cy", best.q[1]);
      dot.style.display = "";
    } else {
      box.textContent = "x " + fmt(sx(p.x)) + ", y " + fmt(sy(p.y));
      dot.style.display = "none";
    }
  });
  svg.addEventListener("mouseleave", function () { box.textContent = ""; dot.style.display = "none"; });
});
