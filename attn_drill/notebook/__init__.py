"""attn-drill in a notebook: `import attn_drill as ad` then `ad.check("mha", MyMHA)`, or `%load_ext attn_drill` and
a cell that starts `%%attn_check mha`. The code runs as a file in the CLI's sandboxed worker (never in the kernel's
own process), with the same diagnoses and the same history.

- source.py  the file a check runs: a `%%attn_check` cell as it is, or the cells that defined the objects given;
- result.py  CheckResult (the report as attributes, plain text, HTML, `repro()`) and ShownMaps (ad.show's);
- api.py     check, show, hint, solution, and the cell magic.
"""
