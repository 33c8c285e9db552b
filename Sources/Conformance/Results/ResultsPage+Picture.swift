extension ResultsPage {
    /// The part of ``script`` that draws a run's picture from its ``CompactTrace``: the palette of versions and
    /// validators, the requested ranges, and the SVG with the geometry, colours and legend of ``Timeline``.
    static let pictureScript = #"""
          function palette(trace) {
            const versions = new Set(trace.versions);
            const validators = new Set();
            for (const request of trace.requests) {
              if (!request.sent && request.version === undefined) { continue; }
              if (request.version !== undefined) { versions.add(request.version); }
              else if (request.validator !== undefined) { validators.add(request.validator); }
            }
            for (const output of trace.outputs) {
              for (const part of output.map) { if (part[2] !== null) { versions.add(part[2]); } }
            }
            const keys = Array.from(versions).sort(function (a, b) { return a - b; }).map(function (v) { return 'v' + v; })
              .concat(Array.from(validators).sort().map(function (e) { return 'e' + e; }));
            const colours = new Map();
            keys.forEach(function (key, index) { colours.set(key, COLOURS[index % COLOURS.length]); });
            return colours;
          }

          // A CompactTrace's requests with their long names, the bytes sent and the first launch put back.
          const NAMES = { m: 'method', s: 'status', r: 'route', u: 'target', a: 'attempt', c: 'connection',
            rg: 'range', ask: 'asked', ir: 'ifRange', x: 'sent', n: 'bytes', p: 'planned', tw: 'twice', o: 'outcome',
            f: 'faults', t: 'time', val: 'validator', v: 'version', enc: 'encoding', loc: 'location', l: 'launch',
            rr: 'rerun' };
          // The spans a Range header asks for, as RunTrace.ByteSpan.requested(by:length:) resolves them.
          function requested(header, length) {
            if (header.slice(0, 6).toLowerCase() !== 'bytes=') { return []; }
            const spans = [];
            for (const part of header.slice(6).split(',')) {
              const spec = part.replace(/[ \t]/g, '');
              const dash = spec.indexOf('-');
              if (dash < 0) { continue; }
              const first = spec.slice(0, dash), last = spec.slice(dash + 1);
              if (first === '') {
                if (!/^[0-9]+$/.test(last) || Number(last) === 0 || length === 0) { continue; }
                spans.push([length - Math.min(Number(last), length), length]);
                continue;
              }
              if (!/^[0-9]+$/.test(first) || Number(first) >= length) { continue; }
              if (last === '') { spans.push([Number(first), length]); continue; }
              if (!/^[0-9]+$/.test(last) || Number(last) < Number(first)) { continue; }
              spans.push([Number(first), Math.min(Number(last), length - 1) + 1]);
            }
            return spans;
          }
          function expanded(compact) {
            const trace = { length: compact.len, versions: compact.vs, expected: compact.exp, span: compact.ms,
              launches: compact.launches, outputs: compact.out, omitted: compact.omitted };
            trace.requests = compact.req.map(function (short, index) {
              // After the requests a long run left out, the numbers go on where they would have been.
              const request = { order: index + 1 + (compact.omitted && index >= compact.omitted.after ?
                compact.omitted.count : 0) };
              for (const key of Object.keys(short)) { request[NAMES[key] || key] = short[key]; }
              if (request.bytes === undefined && request.sent) { request.bytes = request.sent[1] - request.sent[0]; }
              if (request.asked === undefined && request.range) { request.asked = requested(request.range, compact.len); }
              if (compact.launches && request.launch === undefined) { request.launch = 1; }
              return request;
            });
            return trace;
          }

          function draw(trace, scenario, prefix) {
            const colours = palette(trace);
            const colour = function (key) { return key !== null && colours.has(key) ? colours.get(key) : UNKNOWN; };
            let longest = trace.length;
            for (const request of trace.requests) {
              if (request.sent) { longest = Math.max(longest, request.sent[1]); }
              for (const pair of request.asked || []) { longest = Math.max(longest, pair[1]); }
            }
            for (const output of trace.outputs) { longest = Math.max(longest, output.size); }
            const scale = Math.max(longest, 1);
            const x = function (offset) { return BYTES_X + offset / scale * BYTES_W; };
            const time = function (ms) { return TIME_X + Math.max(0, ms) / Math.max(trace.span, 1) * TIME_W; };
            const svg = node('svg', { role: 'img', 'font-family': 'sans-serif', 'font-size': '11',
              fill: '#222222' });
            let y = 22;
            let group = svg;
            const add = function (element) { group.appendChild(element); return element; };
            const rect = function (rx, ry, width, height, fill, extra) {
              return add(node('rect', Object.assign({ x: rx, y: ry, width: Math.max(width, 1), height: height, fill: fill },
                extra || {})));
            };
            const line = function (x1, y1, x2, y2, stroke, extra) {
              return add(node('line', Object.assign({ x1: x1, y1: y1, x2: x2, y2: y2, stroke: stroke }, extra || {})));
            };
            const label = function (lx, ly, text, extra) {
              return add(node('text', Object.assign({ x: lx, y: ly }, extra || {}), text));
            };
            const cut = function (cx, cy) {
              line(cx - 4, cy - 5, cx + 4, cy + 5, '#000000', { 'stroke-width': '2' });
              line(cx - 4, cy + 5, cx + 4, cy - 5, '#000000', { 'stroke-width': '2' });
            };
            const twiceFill = 'url(#' + prefix + '-twice)';
            const noMatchFill = 'url(#' + prefix + '-nomatch)';
            const defs = add(node('defs'));
            const twice = defs.appendChild(node('pattern', { id: prefix + '-twice', width: 6, height: 6,
              patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }));
            twice.appendChild(node('rect', { width: 6, height: 6, fill: '#ffffff', 'fill-opacity': '0.25' }));
            twice.appendChild(node('rect', { width: 2.5, height: 6, fill: '#000000', 'fill-opacity': '0.6' }));
            const nomatch = defs.appendChild(node('pattern', { id: prefix + '-nomatch', width: 6, height: 6,
              patternUnits: 'userSpaceOnUse' }));
            nomatch.appendChild(node('rect', { width: 6, height: 6, fill: '#fbe3e3' }));
            nomatch.appendChild(node('path', { d: 'M0 0L6 6M6 0L0 6', stroke: ALARM, 'stroke-width': '1' }));

            const count = trace.requests.length + (trace.omitted ? trace.omitted.count : 0);
            // The row standing for the requests a long run left out.
            const gap = function () {
              const statuses = Object.keys(trace.omitted.statuses).sort().map(function (status) {
                return status + ' × ' + trace.omitted.statuses[status];
              }).join(', ');
              label(LABEL_X, y + 16, '… ' + trace.omitted.count + ' more requests, left out of the picture',
                { 'font-weight': 'bold', fill: '#555' });
              label(BYTES_X, y + 31, 'statuses ' + statuses + '; from +' + seconds(trace.omitted.time[0]) + ' to +' +
                seconds(trace.omitted.time[1]), { 'font-size': '10', fill: '#555' });
              y += ROW_H;
            };
            label(LABEL_X, y, scenario + ': ' + count + ' request' + (count === 1 ? '' : 's') + ' over ' +
              seconds(trace.span) + ', resource ' + size(trace.length), { 'font-size': '14', 'font-weight': 'bold' });
            // The legend: a swatch per representation, then the marks.
            y += 22;
            const items = [];
            for (const [key, fill] of colours) {
              const name = key[0] === 'v' ? 'version ' + key.slice(1) + (Number(key.slice(1)) === trace.expected ?
                ' (expected)' : '') : 'validator ' + clipped(key.slice(1), 24);
              items.push([function (sx, sy) { rect(sx, sy - 9, 18, 10, fill); }, name]);
            }
            items.push([function (sx, sy) { rect(sx, sy - 11, 18, 13, 'none', { stroke: '#444',
              'stroke-dasharray': '3 2' }); }, 'range asked for']);
            items.push([function (sx, sy) { rect(sx, sy - 9, 18, 10, UNKNOWN); rect(sx, sy - 9, 18, 10, twiceFill); },
              'sent twice']);
            items.push([function (sx, sy) { cut(sx + 9, sy - 4); }, 'cut short']);
            items.push([function (sx, sy) { rect(sx, sy - 9, 18, 10, noMatchFill); }, 'matches no version']);
            items.push([function (sx, sy) { line(sx + 9, sy - 12, sx + 9, sy + 3, ALARM, { 'stroke-width': '3' }); },
              'splice']);
            let lx = LABEL_X;
            for (const [swatch, name] of items) {
              const advance = 24 + name.length * 6.2 + 14;
              if (lx + advance > W) { lx = LABEL_X; y += 18; }
              swatch(lx, y);
              label(lx + 24, y, name);
              lx += advance;
            }
            // The axes.
            y += 30;
            label(LABEL_X, y, 'request', { 'font-weight': 'bold' });
            label(BYTES_X, y - 14, 'bytes of the resource', { 'font-weight': 'bold' });
            label(TIME_X, y - 14, 'time', { 'font-weight': 'bold' });
            const quarter = function (index) {
              return Math.floor(scale / 4) * index + (index === 4 ? scale % 4 : 0);
            };
            for (let index = 0; index <= 4; index += 1) {
              label(x(quarter(index)), y, size(quarter(index)), { fill: '#555', 'font-size': '10',
                'text-anchor': index === 0 ? 'start' : index === 4 ? 'end' : 'middle' });
            }
            label(TIME_X, y, '0 s', { fill: '#555', 'font-size': '10' });
            label(TIME_X + TIME_W, y, seconds(trace.span), { fill: '#555', 'font-size': '10', 'text-anchor': 'end' });
            y += 6;
            const rowsHeight = Math.max(trace.requests.length + (trace.omitted ? 1 : 0), 1) * ROW_H;
            for (let index = 0; index <= 4; index += 1) {
              line(x(quarter(index)), y, x(quarter(index)), y + rowsHeight, '#dddddd');
            }
            line(TIME_X, y, TIME_X, y + rowsHeight, '#dddddd');
            line(TIME_X + TIME_W, y, TIME_X + TIME_W, y + rowsHeight, '#dddddd');
            if (scale > trace.length) {
              line(x(trace.length), y, x(trace.length), y + rowsHeight, '#555555', { 'stroke-dasharray': '2 2' });
            }
            if (count === 0) {
              y += 22;
              label(BYTES_X, y, 'no request reached the server', { fill: '#555' });
              y += 12;
            }
            // One row per request.
            trace.requests.forEach(function (request, index) {
              const order = request.order;
              if (trace.omitted && index === trace.omitted.after) { gap(); }
              const top = y, barTop = top + 5;
              const fill = colour(keyOf(request));
              group = svg.appendChild(node('g', { class: 'request' }));
              group.appendChild(node('title', {}, details(request, order)));
              if (order % 2 === 0) { rect(0, top, W, ROW_H, '#f6f6f6'); }
              label(LABEL_X, top + 16, '#' + order + ' ' + (request.method || 'GET') + ' ' + request.status,
                { 'font-weight': 'bold' });
              let place = route(request);
              if (request.attempt !== undefined) { place += ' · attempt ' + request.attempt; }
              label(LABEL_X, top + 31, place + ' · conn ' + request.connection, { fill: '#555', 'font-size': '10' });
              for (const pair of request.asked || []) {
                rect(x(pair[0]), barTop - 3, x(pair[1]) - x(pair[0]), BAR_H + 6, 'none', { stroke: '#444',
                  'stroke-dasharray': '3 2' });
              }
              if (request.sent) {
                rect(x(request.sent[0]), barTop, x(request.sent[1]) - x(request.sent[0]), BAR_H, fill);
                for (const pair of request.twice || []) {
                  rect(x(pair[0]), barTop, x(pair[1]) - x(pair[0]), BAR_H, twiceFill);
                }
                if (request.outcome) { cut(x(request.sent[1]), barTop + BAR_H / 2); }
              } else if (request.outcome) {
                cut(x(0) + 5, barTop + BAR_H / 2);
              }
              if (request.location) { label(BYTES_X, barTop + 11, '↪ redirect ' + request.status, { fill: '#333' }); }
              label(BYTES_X, top + 33, clipped(summary(request), 88), { 'font-size': '10' });
              const start = time(request.time[0]);
              rect(start, barTop, time(request.time[1]) - start, BAR_H, fill, { 'fill-opacity': '0.7' });
              label(TIME_X, top + 33, '+' + seconds(request.time[0]) + ' → +' + seconds(request.time[1]),
                { 'font-size': '10' });
              group = svg;
              y += ROW_H;
            });
            // What each output holds.
            y += 28;
            label(LABEL_X, y, 'output content', { 'font-weight': 'bold' });
            label(BYTES_X, y, 'which version each block of the output holds', { fill: '#555' });
            y += 8;
            if (trace.outputs.length === 0) {
              y += 18;
              label(BYTES_X, y, 'no output was inspected', { fill: '#555' });
            }
            for (const output of trace.outputs) {
              output.name = output.name || scenario + '.bin';
              const top = y + 6;
              const splices = [];
              for (let index = 1; index < output.map.length; index += 1) {
                if (output.map[index][2] !== output.map[index - 1][2]) { splices.push(output.map[index][0]); }
              }
              const parts = output.map.map(function (part) {
                return span(part) + ' ' + (part[2] === null ? 'matches no version' : 'version ' + part[2]);
              });
              let description = output.name + ': ' + (output.missing ? 'missing' : output.size + ' bytes; ' +
                parts.join(', ') + (splices.length ? '; spliced at ' + splices.join(', ') : ''));
              group = svg.appendChild(node('g', { class: 'output' }));
              group.appendChild(node('title', {}, description));
              label(LABEL_X, top + 13, clipped(output.name, 28), { 'font-weight': 'bold' });
              label(LABEL_X, top + 28, output.missing ? 'missing' : size(output.size), { fill: '#555',
                'font-size': '10' });
              rect(x(0), top, x(trace.length) - x(0), 18, '#ffffff', { stroke: '#999999', 'stroke-dasharray': '3 2' });
              for (const part of output.map) {
                rect(x(part[0]), top, x(part[1]) - x(part[0]), 18, part[2] === null ? noMatchFill :
                  colour('v' + part[2]));
              }
              for (const offset of splices) { line(x(offset), top - 5, x(offset), top + 23, ALARM,
                { 'stroke-width': '3' }); }
              let caption = output.map.map(function (part) {
                return (part[2] === null ? 'no version' : 'v' + part[2]) + ' ' + span(part);
              }).join(' · ');
              if (splices.length) { caption = 'spliced: ' + caption; }
              if (output.missing) { caption = 'no file'; } else if (output.map.length === 0) { caption = 'empty'; }
              label(BYTES_X, top + 33, clipped(caption, 100), splices.length ? { 'font-size': '10', fill: ALARM } :
                { 'font-size': '10' });
              group = svg;
              y += OUTPUT_H;
            }
            y += 8;
            svg.setAttribute('width', String(W));
            svg.setAttribute('height', String(Math.round(y)));
            svg.setAttribute('viewBox', '0 0 ' + W + ' ' + Math.round(y));
            svg.insertBefore(node('title', {}, 'Timeline of ' + scenario + ': ' + count + ' requests, ' +
              trace.outputs.length + ' outputs'), svg.firstChild);
            return svg;
          }

        """#
}
