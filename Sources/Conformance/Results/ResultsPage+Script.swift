extension ResultsPage {
    /// The page's script: the scheme switch, the grade filter, and the detail of a run (`#SCHEME/CLIENT/SCENARIO`),
    /// whose picture it draws from the run's ``CompactTrace`` with the geometry, colours and legend of ``Timeline``
    /// (docs/conformance.md, "The picture of a run"). One function scope: the helpers, the picture
    /// (``pictureScript``, in its own file), then the detail, the filter and the scheme switch.
    static let script = [scriptHelpers, pictureScript, scriptDetail].joined(separator: "\n")

    /// The data's expansion and the small helpers the picture and the detail share.
    static let scriptHelpers = #"""
        'use strict';
        (function () {
          // Repeated strings are written once (StringTable): {"$": N} stands for strings[N], and every object key is
          // its index in keys.
          const page = JSON.parse(document.getElementById('results-data').textContent);
          const strings = page.strings, keys = page.keys;
          const data = JSON.parse(JSON.stringify(page.data), function (key, value) {
            if (value === null || typeof value !== 'object' || Array.isArray(value)) { return value; }
            const names = Object.keys(value);
            if (names.length === 1 && names[0] === '$' && typeof value.$ === 'number') { return strings[value.$]; }
            const named = {};
            for (const name of names) { named[keys[Number(name)]] = value[name]; }
            return named;
          });
          const NS = 'http://www.w3.org/2000/svg';
          const COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#17becf', '#edc948', '#9c755f', '#8c564b',
            '#7f7f7f', '#bcbd22'];
          const UNKNOWN = '#9e9e9e';
          const ALARM = '#d62728';
          const W = 960, LABEL_X = 8, BYTES_X = 200, BYTES_W = 520, TIME_X = 750, TIME_W = 190, ROW_H = 40,
            BAR_H = 14, OUTPUT_H = 46;

          function size(bytes) {
            const units = [['GiB', 1073741824], ['MiB', 1048576], ['KiB', 1024]];
            for (const [name, unit] of units) {
              if (bytes >= unit) {
                const tenths = Math.floor((bytes * 10 + unit / 2) / unit);
                return (tenths % 10 === 0 ? String(tenths / 10) : (tenths / 10).toFixed(1)) + ' ' + name;
              }
            }
            return bytes + ' B';
          }
          function seconds(ms) { return (ms / 1000).toFixed(3) + ' s'; }
          function span(pair) { return pair[1] > pair[0] ? pair[0] + '-' + (pair[1] - 1) : 'empty at ' + pair[0]; }
          function clipped(text, count) { return text.length <= count ? text : text.slice(0, count - 1) + '…'; }
          function node(name, attributes, text) {
            const element = document.createElementNS(NS, name);
            for (const key of Object.keys(attributes || {})) {
              const value = attributes[key];
              element.setAttribute(key, typeof value === 'number' ? String(Math.round(value * 10) / 10) : value);
            }
            if (text !== undefined) { element.textContent = text; }
            return element;
          }
          function html(name, attributes, text) {
            const element = document.createElement(name);
            for (const key of Object.keys(attributes || {})) { element.setAttribute(key, attributes[key]); }
            if (text !== undefined) { element.textContent = text; }
            return element;
          }
          function route(request) {
            if (request.route !== undefined) { return request.route; }
            return request.target === undefined ? 'main' : clipped(request.target, 24);
          }
          function outcome(request) { return request.outcome || 'complete'; }
          function twiceBytes(request) {
            return (request.twice || []).reduce(function (sum, pair) { return sum + pair[1] - pair[0]; }, 0);
          }
          function summary(request) {
            const parts = [];
            if (request.location) { parts.push('→ ' + request.location); }
            if (request.range) { parts.push('Range ' + request.range); }
            if (request.ifRange !== undefined) { parts.push('If-Range'); }
            if (request.sent) {
              parts.push('sent ' + span(request.sent) + ' (' + size(request.sent[1] - request.sent[0]) + ')');
            } else if (!request.location) {
              parts.push(request.bytes ? request.bytes + ' body bytes' : 'no body');
            }
            const twice = twiceBytes(request);
            if (twice > 0) { parts.push(size(twice) + ' sent twice'); }
            if (request.outcome) { parts.push(request.outcome); }
            if (request.encoding) { parts.push(request.encoding); }
            return parts.concat(request.faults || []).join(' · ');
          }
          function launchLabel(request) {
            if (request.launch === undefined) { return ''; }
            return request.rerun ? request.launch + ' (harness re-run)' : String(request.launch);
          }
          function details(request, order) {
            const bytes = request.bytes || 0;
            const planned = request.planned === undefined ? bytes : request.planned;
            const lines = ['#' + order + ' ' + (request.method || 'GET') + ' ' + (request.target || '') + ' → ' +
              request.status + ' (' + outcome(request) + ')'];
            if (request.target === undefined) {
              lines.push('route ' + (request.route === undefined ? '(main)' : request.route) +
                (request.attempt === undefined ? '' : ', attempt ' + request.attempt));
            }
            if (request.range) {
              lines.push('Range: ' + request.range + (request.asked ? ' = ' + request.asked.map(span).join(', ') : ''));
            }
            if (request.ifRange !== undefined) { lines.push('If-Range: ' + request.ifRange); }
            lines.push(request.sent ? 'sent ' + span(request.sent) + ': ' + bytes + ' of ' + planned +
              ' planned body bytes' : bytes + ' of ' + planned + ' planned body bytes sent');
            if (request.twice) { lines.push('sent twice: ' + request.twice.map(span).join(', ')); }
            if (request.validator) { lines.push('validator ' + request.validator); }
            if (request.version !== undefined) { lines.push('version ' + request.version); }
            if (request.encoding) { lines.push('Content-Encoding: ' + request.encoding); }
            if (request.location) { lines.push('Location: ' + request.location); }
            if (request.faults) { lines.push('faults: ' + request.faults.join(', ')); }
            if (request.launch !== undefined) { lines.push('launch ' + launchLabel(request)); }
            lines.push('arrived +' + seconds(request.time[0]) + ', ended +' + seconds(request.time[1]) +
              ', connection ' + request.connection);
            return lines.join('\n');
          }
          function keyOf(request) {
            if (request.version !== undefined) { return 'v' + request.version; }
            return request.validator === undefined ? null : 'e' + request.validator;
          }
        """#

    /// The request table, the reproducer, a run's detail, the grade filter and the scheme switch.
    static let scriptDetail = #"""
          function requestTable(trace) {
            const details = html('details');
            details.appendChild(html('summary', {}, 'Requests (' + (trace.requests.length +
              (trace.omitted ? trace.omitted.count : 0)) + ')'));
            const table = details.appendChild(html('table'));
            const head = table.appendChild(html('tr'));
            for (const name of ['#', 'method', 'status', 'route', 'Range', 'If-Range', 'sent', 'sent twice', 'outcome',
              'version', 'validator', 'faults', 'arrived', 'ended', 'Location', 'launch']) {
              head.appendChild(html('th', {}, name));
            }
            trace.requests.forEach(function (request, index) {
              if (trace.omitted && index === trace.omitted.after) {
                const gap = table.appendChild(html('tr')).appendChild(html('td', { colspan: '16' },
                  '… ' + trace.omitted.count + ' more requests left out'));
                gap.style.fontStyle = 'italic';
              }
              const bytes = request.bytes || 0;
              const planned = request.planned === undefined ? bytes : request.planned;
              const row = table.appendChild(html('tr'));
              for (const value of [String(request.order), request.method || 'GET', String(request.status),
                request.target === undefined ? (request.route === undefined ? 'main' : request.route) : request.target,
                request.range || '', request.ifRange || '',
                (request.sent ? span(request.sent) + ' (' + bytes + ' of ' + planned + ')' : bytes + ' of ' + planned),
                (request.twice || []).map(span).join(', '), outcome(request),
                request.version === undefined ? '' : String(request.version), request.validator || '',
                (request.faults || []).join(', '), '+' + seconds(request.time[0]), '+' + seconds(request.time[1]),
                request.location || '', launchLabel(request)]) {
                row.appendChild(html('td', {}, value));
              }
            });
            return details;
          }

          // The reproducer as the other reports write it (Report.reproducerScript), its {dir} and {run} filled in.
          function reproducerScript(reproducer, directory, run, observed) {
            const fill = function (text) { return text.split('{dir}').join(directory).split('{run}').join(run || '{run}'); };
            // Command lines come as their words (so the words a column's cells share are written once).
            const joined = function (line) { return Array.isArray(line) ? line.join(' ') : line; };
            const lines = ['# 1. the server, in a terminal of its own (stop it with Ctrl-C)', joined(reproducer.server),
              '# 2. a fresh directory for the client'].concat(reproducer.setup.map(joined));
            lines.push('# 3. the client' + (reproducer.note ? ': ' + reproducer.note : ''));
            lines.push(reproducer.clientIsCommand ? joined(reproducer.client) : '#    ' + joined(reproducer.client));
            if (reproducer.steps.length) {
              lines.push('# 4. while it runs:');
              for (const step of reproducer.steps) { lines.push('#    ' + step); }
            }
            const compare = reproducer.compare;
            lines.push('# ' + (reproducer.steps.length ? 5 : 4) + '. compare: ' + compare.expected);
            if (compare.sha256) { lines.push('#    expected SHA-256: ' + compare.sha256); }
            for (const rule of compare.rules) { lines.push('#    ' + rule); }
            lines.push('#    this run: ' + (compare.observed || observed || ''));
            if (compare.outputs.length) {
              const outputs = compare.outputs.map(quoted).join(' ');
              lines.push('ls -l ' + outputs + '; sha256sum ' + outputs);
            }
            lines.push(compare.journal);
            return fill(lines.join('\n') + '\n');
          }
          // A word as ShellQuoting writes it: bare when it holds only safe characters, else in single quotes.
          function quoted(word) {
            if (word !== '' && /^[A-Za-z0-9@%+=:,.\/_{}-]+$/.test(word)) { return word; }
            return "'" + word.split("'").join("'\\''") + "'";
          }

          const detail = document.getElementById('detail');
          // A run's detail: verdict, reasons, notes, reproducer, picture and requests, into `into`.
          function fill(into, scheme, client, scenario) {
            const column = data.clients[client];
            const cell = column.runs[scheme].cells[scenario];
            const references = data.references[scenario] || [];
            const header = document.getElementById('row-' + scheme + '-' + scenario);
            const described = header ? header.querySelector('small.description') : null;
            const row = { description: described ? described.textContent : '', references: references };
            into.appendChild(html('h2', {}, scenario + ' × ' + client + ' ' + column.version + ' over ' + scheme));
            if (row.description) { into.appendChild(html('p', {}, row.description)); }
            if (row.references.length) {
              const cited = into.appendChild(html('p', {}, 'Rests on: '));
              row.references.forEach(function (reference, index) {
                if (index > 0) { cited.appendChild(document.createTextNode(' · ')); }
                cited.appendChild(reference[1] ? html('a', { href: reference[1] }, reference[0]) :
                  document.createTextNode(reference[0]));
              });
            }
            const verdict = into.appendChild(html('p'));
            verdict.appendChild(html('span', { class: 'verdict ' + (cell.grade === 'n/a' ? 'na' : cell.grade) },
              cell.grade === 'pass' || cell.grade === 'n/a' ? cell.grade : cell.grade.toUpperCase()));
            verdict.appendChild(document.createTextNode((cell.reason ? ' ' + cell.reason : '') +
              (cell.seconds !== undefined ? ' (' + cell.seconds + ' s)' : '')));
            if (cell.was) { into.appendChild(html('p', {}, 'Changed: was ' + cell.was + '.')); }
            for (const list of [cell.reasons, cell.notes]) {
              if (!list) { continue; }
              const ul = into.appendChild(html('ul'));
              for (const item of list) { ul.appendChild(html('li', {}, item)); }
            }
            if (cell.reproducer) {
              into.appendChild(html('h3', {}, 'Reproduce by hand (from a checkout of this repository)'));
              const directory = column.runs[scheme].reproductions + '/' + scenario + '/' + client;
              into.appendChild(html('pre', {}, reproducerScript(cell.reproducer, directory, cell.run, cell.reason)));
            }
            if (cell.trace) {
              const trace = expanded(cell.trace);
              into.appendChild(html('h3', {}, 'The run'));
              into.appendChild(draw(trace, scenario, 'tl-' + scheme + '-' + client + '-' + scenario));
              into.appendChild(requestTable(trace));
            } else {
              into.appendChild(html('p', {}, 'This pair did not run, so there is no picture.'));
            }
            into.appendChild(html('p')).appendChild(html('a', { href: '#row-' + scheme + '-' + scenario },
              'Back to the table'));
          }
          function show() {
            const parts = location.hash.slice(1).split('/').map(decodeURIComponent);
            detail.replaceChildren();
            const column = parts.length === 3 ? data.clients[parts[1]] : undefined;
            const run = column ? column.runs[parts[0]] : undefined;
            if (!run || !run.cells[parts[2]]) { detail.hidden = true; return; }
            const [scheme, client, scenario] = parts;
            if (document.querySelector('input[name=scheme]:checked').value !== scheme) {
              document.querySelector('input[name=scheme][value=' + scheme + ']').checked = true;
              switchScheme();
            }
            fill(detail, scheme, client, scenario);
            detail.hidden = false;
            detail.scrollIntoView();
          }
          // For scripts/check-html: every run's detail built once, away from the page; returns how many.
          window.rangecheckDrawEveryRun = function () {
            let count = 0;
            for (const client of Object.keys(data.clients)) {
              for (const scheme of Object.keys(data.clients[client].runs)) {
                for (const scenario of Object.keys(data.clients[client].runs[scheme].cells)) {
                  fill(document.createElement('section'), scheme, client, scenario);
                  count += 1;
                }
              }
            }
            return count;
          };

          const filter = document.getElementById('filter');
          function applyFilter() {
            const wanted = filter.value;
            let shown = 0, total = 0;
            for (const table of document.querySelectorAll('table.results')) {
              for (const row of table.tBodies[0].rows) {
                const grades = row.getAttribute('data-grades').split(' ');
                const visible = !wanted || grades.indexOf(wanted) >= 0;
                row.classList.toggle('hidden', !visible);
                for (const cell of row.cells) {
                  if (cell.tagName !== 'TD') { continue; }
                  const matches = !wanted || cell.classList.contains(wanted);
                  cell.classList.toggle('dim', !matches);
                }
                if (!table.hidden) { total += 1; if (visible) { shown += 1; } }
              }
            }
            document.getElementById('shown').textContent = shown + ' of ' + total + ' rows shown';
          }
          function switchScheme() {
            const scheme = document.querySelector('input[name=scheme]:checked').value;
            for (const table of document.querySelectorAll('table.results')) {
              table.hidden = table.getAttribute('data-scheme') !== scheme;
            }
            applyFilter();
          }
          filter.addEventListener('change', applyFilter);
          const describe = document.getElementById('describe');
          describe.addEventListener('change', function () { document.body.classList.toggle('describe', describe.checked); });
          for (const radio of document.querySelectorAll('input[name=scheme]')) {
            radio.addEventListener('change', switchScheme);
          }
          window.addEventListener('hashchange', show);
          switchScheme();
          show();
        })();

        """#
}
