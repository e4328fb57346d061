'use strict';
// plotly.js with the trace types the apps draw (scatter is always in plotly.js's core).
// After adding a trace type to llmcost/plots/ (base.TRACE_TYPES): add it here and run `make plotly-bundle`
// (tests/test_plotview.py fails until the bundle registers every type the apps use).
var Plotly = require('plotly.js/lib/core');
Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/waterfall'),
    require('plotly.js/lib/table'),
    require('plotly.js/lib/contour'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/lib/histogram'),
]);
module.exports = Plotly;
