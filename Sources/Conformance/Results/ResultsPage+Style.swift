extension ResultsPage {
    /// The page's style sheet: the grade colours of the other HTML reports.
    static let style = """
        body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
        .intro{max-width:60em}
        table.results{border-collapse:collapse;font-size:.85em;margin-top:1em}
        table.results caption{text-align:left;font-weight:bold;padding:.3em 0}
        th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
        thead th{background:#f4f4f4;position:sticky;top:0;z-index:1}
        thead th small{display:block;font-weight:normal;color:#555}
        thead th.own{background:#e8eef8}
        tbody th{background:#fafafa;text-align:left;font-weight:bold;min-width:16em;max-width:26em}
        tbody th small{display:block;font-weight:normal;color:#444}
        tbody th small.references{color:#555;font-size:.9em}
        .results small.description{display:none}body.describe .results small.description{display:block}
        td{text-align:center;white-space:nowrap}
        td a{color:inherit;text-decoration:none;font-weight:bold}
        td a:hover,td a:focus{text-decoration:underline}
        .pass{background:#d9f2d9}.fail{background:#f8d0d0}.corrupt{background:#8b0000;color:#fff}
        .unsafe{background:#ffd8a8}.costly{background:#fff3b0}.na,.skipped,.none{background:#eee;color:#666}
        td.changed{outline:2px solid #1f4e9c;outline-offset:-2px}
        .changed-mark{color:#1f4e9c;margin-left:.2em;font-size:.8em}td.corrupt .changed-mark{color:#fff}
        tr.hidden{display:none}td.dim{opacity:.35}
        thead th small.counts span{padding:0 .2em;font-weight:bold}thead th small.recipe a{color:#1f4e9c}
        tfoot td{font-size:.85em;white-space:normal;text-align:left}tfoot th{text-align:left}
        .controls{display:flex;gap:1em;flex-wrap:wrap;align-items:end}
        .controls fieldset{border:1px solid #ccc}
        .legend{display:grid;grid-template-columns:max-content 1fr;gap:.2em .8em;max-width:60em}
        .legend dt span{display:inline-block;padding:0 .4em;font-weight:bold}.legend dd{margin:0}
        #detail{border:2px solid #888;padding:1em;margin:1em 0;background:#fff}
        #detail pre{background:#f4f4f4;padding:8px;overflow-x:auto;font-size:.85em}
        #detail svg{max-width:100%;height:auto}
        #detail table{border-collapse:collapse;font-size:.8em}
        .verdict{font-weight:bold;padding:0 .4em}
        dl.columns dt{font-weight:bold;margin-top:.6em}dl.columns dd{margin-left:1em}
        code{background:#f4f4f4;padding:1px 3px}

        """
}
