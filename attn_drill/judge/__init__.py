"""The judge: runs a user's code against the reference inside the worker process and decides the verdict.

- engine.py     the stages in order (load, api, shapes, values, gradients, dtypes, device);
- specs/        one module per exercise: its cases, how to call the user's code and the reference;
- diagnoses/    which mistake explains a failure, one module per family of mistakes;
- variants/     the reference with one mistake switched on (a knob per mistake), one module per family;
- probes/       measurements read off the user's code's behaviour, one module per family;
- tamper.py     finds and undoes what the user's code replaced in torch or in the checker;
- compare.py, calls.py, trace.py, memory.py, load.py, pictures.py  the tools the stages share.

It runs inside attn_drill/process/worker.py; nothing here starts or kills a process.
"""
