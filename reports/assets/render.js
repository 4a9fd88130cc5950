(function () {
  'use strict';
  var charts = [];
  window.lockstepCharts = charts;
  window.lockstepRendered = false;
  if (typeof Chart === 'undefined') {
    document.body.setAttribute('data-chart-js', 'missing');
    return;
  }
  var data = JSON.parse(document.getElementById('lockstep-data').textContent);
  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
                 '#bcbd22', '#17becf'];
  function color(i) { return palette[i % palette.length]; }
  function countPoints(chart) {
    var n = 0;
    chart.data.datasets.forEach(function (ds) {
      ds.data.forEach(function (p) { if (p !== null && p !== undefined) { n++; } });
    });
    return n;
  }
  function draw(id, kind, config) {
    var canvas = document.getElementById(id);
    if (!canvas) { return; }
    config.options.animation = false;
    config.options.responsive = false;
    var chart = new Chart(canvas, config);
    var points = countPoints(chart);
    canvas.setAttribute('data-drawn', String(points));
    charts.push({id: id, kind: kind, points: points, chart: chart});
  }
  data.scenarios.forEach(function (s) {
    if (s.loss) {
      draw('loss-' + s.index, 'loss', {
        type: 'line',
        data: {
          labels: s.loss.steps,
          datasets: s.loss.ranks.map(function (r, i) {
            return {label: 'rank ' + r.rank, data: r.values, borderColor: color(i), backgroundColor: color(i),
                    borderWidth: 1.5, pointRadius: 2, spanGaps: false};
          })
        },
        options: {
          plugins: {title: {display: true, text: 'Loss per rank'}},
          scales: {x: {title: {display: true, text: 'step'}}, y: {title: {display: true, text: 'loss'}}}
        }
      });
    }
    if (s.divergence) {
      draw('divergence-' + s.index, 'divergence', {
        type: 'scatter',
        data: {datasets: [{label: 'ranks disagree', data: s.divergence.cells, pointStyle: 'rect', pointRadius: 6,
                           pointHoverRadius: 8, backgroundColor: '#d62728', borderColor: '#8b0000'}]},
        options: {
          plugins: {
            title: {display: true, text: 'Divergence map: cells where ranks hold different tensors'},
            legend: {display: false},
            tooltip: {callbacks: {
              title: function (items) { return 'step ' + items[0].raw.x + ', ' + items[0].raw.y; },
              label: function (item) {
                return item.raw.groups.map(function (g) {
                  return 'ranks [' + g.ranks.join(', ') + ']: ' + g.digest;
                });
              }
            }}
          },
          scales: {
            x: {type: 'linear', title: {display: true, text: 'step'}, ticks: {precision: 0},
                suggestedMin: s.divergence.min_step, suggestedMax: s.divergence.max_step},
            y: {type: 'category', labels: s.divergence.tensors, offset: true, title: {display: true, text: 'tensor'}}
          }
        }
      });
    }
    if (s.timeline) {
      var done = s.timeline.bars.filter(function (b) { return !b.in_flight; });
      var stuck = s.timeline.bars.filter(function (b) { return b.in_flight; });
      draw('timeline-' + s.index, 'timeline', {
        type: 'bar',
        data: {
          labels: s.timeline.ranks,
          datasets: [
            {label: 'completed', data: done, backgroundColor: '#1f77b4', grouped: false, barPercentage: 0.6},
            {label: 'never completed', data: stuck, backgroundColor: '#d62728', grouped: false, barPercentage: 0.6}
          ]
        },
        options: {
          indexAxis: 'y',
          plugins: {
            title: {display: true, text: 'Last collectives per rank'},
            tooltip: {callbacks: {label: function (item) {
              var b = item.raw;
              return b.op + ' ' + b.group + ' seq ' + b.seq + ' (step ' + b.step + ')' +
                     (b.in_flight ? ', never completed' : '');
            }}}
          },
          scales: {x: {type: 'linear', title: {display: true, text: 'seconds since rank start'}},
                   y: {type: 'category'}}
        }
      });
    }
  });
  window.lockstepRendered = true;
  // What a browser test reads from the DOM after the script ran: rendered, and how many charts.
  document.body.setAttribute('data-rendered', 'true');
  document.body.setAttribute('data-charts', String(charts.length));
  var list = document.getElementById('lockstep-errors');
  if (list && window.lockstepErrors) { list.textContent = window.lockstepErrors.join('\n'); }
})();
