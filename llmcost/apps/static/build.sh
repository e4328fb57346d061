#!/usr/bin/env bash
# Rebuilds plotly-llmcost.min.js from plotly-llmcost.entry.js with node and npm (`make
# plotly-bundle`): plotly.js at the version the installed plotly package carries, so the
# apps draw with the same plotly.js as the reports, bundled by esbuild with plotly.js's own
# options (its esbuild-config.js) and minified. The output is committed: serving the apps
# needs no node.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${PY:-python3}"
version="$("$py" -c 'import plotly.offline as o; print(o.get_plotlyjs_version())')"
esbuild_version="0.28.2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent "plotly.js@$version" "esbuild@$esbuild_version"
cp "$here/plotly-llmcost.entry.js" entry.js
traces="scatter $(grep -o "lib/[a-z0-9]*'" entry.js | grep -v "lib/core'" | sed "s|lib/||; s|'||" | tr '\n' ' ')"
banner="/*! plotly.js v$version (MIT License, Copyright 2012-2026 Plotly, Inc.); llmcost bundle, traces: ${traces% } */"
npx esbuild entry.js --bundle --minify --format=iife --global-name=Plotly --target=es2016 \
  --define:global=window --define:define.amd=false --alias:stream=stream-browserify \
  --loader:.css=empty --legal-comments=eof "--banner:js=$banner" \
  --outfile="$here/plotly-llmcost.min.js"
echo "wrote $here/plotly-llmcost.min.js: plotly.js $version, traces: $traces"
