"""Runs every blind11 file through the installed `attn-drill check` and the side-effect checks the MANIFEST lists.

Not a checked file. Every run works on a fresh COPY under /tmp/b11run (the hostile files overwrite their neighbours
and the files named on the command line), with a fresh, seeded ATTN_DRILL_HOME and a scratch cwd.

    python run_blind11.py                 # every single file, then the batches
    python run_blind11.py sdpa/crash__abort.py ...   # only those (paths relative to this folder)
    python run_blind11.py --batches       # only the batches
Prints one line per file and writes /tmp/b11run/results.json.
"""

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

CORPUS = os.path.dirname(os.path.abspath(__file__))
RUN = "/tmp/b11run"
MARKERS = "/tmp/attn_blind11_markers"
BIG = "/tmp/attn_blind11_big.bin"
CLI = shutil.which("attn-drill")

BATCHES = {
    "B1-helpers-per-folder": (None, ["sdpa/ok__helpers_sdpa.py", "mha/ok__helpers_mha.py", "softmax/ok__helpers_softmax.py"]),
    "B2-fake-json-fds": ("sdpa", ["sdpa/crash__fake_json_fds.py", "sdpa/ok__plain_victim.py",
                                  "sdpa/missing-scale__plain_victim.py"]),
    "B3-argv-rewriter": ("sdpa", ["sdpa/ok__argv_rewriter.py", "sdpa/missing-scale__plain_victim.py",
                                  "sdpa/ok__plain_victim.py"]),
    "B4-patch-checker-modules": ("sdpa", ["sdpa/torch-modified__patch_checker_modules.py", "sdpa/ok__plain_victim.py",
                                          "sdpa/missing-scale__plain_victim.py"]),
    "B5-leaked-globals": ("sdpa", ["sdpa/ok__leaks_globals.py", "sdpa/missing-scale__uses_leaked_globals.py",
                                   "sdpa/ok__plain_victim.py"]),
    "B6-global-torch-settings": ("sdpa", ["sdpa/torch-modified__global_torch_settings.py", "sdpa/ok__plain_victim.py"]),
    "B7-linear-forward-patch": ("mha", ["mha/torch-modified__linear_forward_patch.py", "mha/ok__plain_victim.py"]),
    "B8-every-monkeypatch": ("sdpa", ["sdpa/torch-modified__assign_allclose.py", "sdpa/ok__plain_victim.py",
                                      "sdpa/torch-modified__tensor_methods.py", "sdpa/ok__plain_victim.py",
                                      "sdpa/torch-modified__torch_library_aten.py", "sdpa/ok__plain_victim.py",
                                      "sdpa/torch-modified__builtins_override.py", "sdpa/ok__plain_victim.py",
                                      "sdpa/torch-modified__sys_modules_swap.py", "sdpa/ok__plain_victim.py",
                                      "sdpa/missing-scale__plain_victim.py"]),
}


# the same files again, but with the CHECKER started from the files' own folder (cwd = the folder with the shadows)
CWD_IN_FOLDER = {
    "C1-cwd-sdpa-shadows": ("sdpa", ["sdpa/missing-scale__stdlib_shadows.py"]),
    "C2-cwd-mha-shadows": ("mha", ["mha/ok__helpers_mha.py"]),
    "C3-cwd-softmax-shadows": ("softmax", ["softmax/ok__helpers_softmax.py"]),
}


def expected_slug(name):
    return name.split("__", 1)[0]


def digest_tree(root, skip=()):
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(dirpath, d) not in skip and d != "__pycache__"]
        for f in files:
            p = os.path.join(dirpath, f)
            try:
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
            except OSError:
                out[os.path.relpath(p, root)] = "unreadable"
    return out


def home_snapshot(home):
    """What must survive a check: every file's hash (history.sqlite3 and state.json aside), every history row, state keys."""
    import sqlite3
    snap = {"files": {k: v for k, v in digest_tree(home).items()
                      if k not in ("history.sqlite3", "state.json", ".state.lock", "big.bin")
                      and not k.startswith("history.sqlite3-")}}
    try:
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(home, "history.sqlite3"), uri=True, timeout=5)
        tables = [t for (t,) in db.execute("select name from sqlite_master where type = 'table'")]
        snap["rows"] = {t: set(map(repr, db.execute('select * from "%s"' % t).fetchall())) for t in tables}
        db.close()
    except Exception as e:
        snap["rows"] = "unreadable: %s" % e
    try:
        snap["state_keys"] = set(json.load(open(os.path.join(home, "state.json"))))
    except Exception as e:
        snap["state_keys"] = "unreadable: %s" % e
    return snap


def home_losses(before, after):
    lost = []
    for k, v in before["files"].items():
        if after["files"].get(k) != v:
            lost.append(k + (" (gone)" if k not in after["files"] else " (changed)"))
    if isinstance(after["rows"], str):
        lost.append("history.sqlite3 " + after["rows"])
    elif isinstance(before["rows"], dict):
        for t, rows in before["rows"].items():
            missing = rows - after["rows"].get(t, set())
            if missing:
                lost.append("history.sqlite3 table %s lost %d of %d rows" % (t, len(missing), len(rows)))
    if isinstance(after["state_keys"], str):
        lost.append("state.json " + after["state_keys"])
    elif isinstance(before["state_keys"], set) and before["state_keys"] - after["state_keys"]:
        lost.append("state.json lost keys %s" % sorted(before["state_keys"] - after["state_keys"]))
    return lost


def seed_home(home, practice):
    env = dict(os.environ, ATTN_DRILL_HOME=home)
    os.makedirs(practice, exist_ok=True)
    run = lambda *a: subprocess.run([CLI, *a], cwd=practice, env=env, stdin=subprocess.DEVNULL,  # noqa: E731
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    run("start", "sdpa")
    with open(os.path.join(practice, "attn-practice", "sdpa.py"), "a") as f:
        f.write("\n# my edits\n")
    run("check")
    run("reset", "sdpa", "--yes")  # backs the edited file up under the home
    run("start", "softmax")


def b11_pids():
    """Processes with a process or thread named b11-* (every survivor names itself so)."""
    pids = set()
    for comm in glob.glob("/proc/[0-9]*/task/[0-9]*/comm"):
        try:
            with open(comm) as f:
                if f.read().startswith("b11-"):
                    pids.add(int(comm.split("/")[2]))
        except OSError:
            pass
    return sorted(pids)


def leftovers():
    """Files the hostile writers leave: big files and fill files anywhere under /tmp (two levels) or the work folder."""
    names = ["b11_big.bin", "b11_fill_*.bin"]
    pats = [BIG] + [os.path.join(*(["/tmp"] + ["*"] * depth + [n])) for depth in range(3) for n in names]
    return sorted({p for pat in pats for p in glob.glob(pat)})


def marker_pids():
    pids = set()
    for log in glob.glob(MARKERS + "/*.log"):
        for line in open(log, errors="replace"):
            m = re.match(r"pid (\d+) ", line)
            if m:
                pids.add(int(m.group(1)))
    return pids


def alive(pid):
    try:
        os.kill(pid, 0)
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def late_marker_lines(after):
    late = []
    for log in glob.glob(MARKERS + "/*.log"):
        for line in open(log, errors="replace"):
            m = re.search(r"t=([0-9.]+)", line)
            if m and float(m.group(1)) > after:
                late.append(os.path.basename(log) + ": " + line.strip())
    return late


def listening(port):
    out = subprocess.run(["ss", "-ltnu"], capture_output=True, text=True).stdout
    return (":%d " % port) in out


def parse_lines(stdout):
    try:  # one file: one (pretty-printed) object
        o = json.loads(stdout)
        if isinstance(o, dict) and "passed" in o:
            return [o]
    except ValueError:
        pass
    objs = []
    for line in stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if isinstance(o, dict) and "passed" in o:
            objs.append(o)
    return objs


def verdict(obj):
    if obj is None:
        return "no-json"
    errors = [f["slug"] for f in obj.get("findings", []) if f.get("level") == "error"]
    if obj.get("passed") and not errors:
        return "ok"
    return errors[0] if errors else ("FAILED-without-error" if not obj.get("passed") else "ok")


def memory_watchdog(proc):
    """Safety net for the 20 GiB file: kill the check's whole tree if the machine runs low on memory."""
    while proc.poll() is None:
        with open("/proc/meminfo") as f:
            avail = int(re.search(r"MemAvailable:\s+(\d+)", f.read()).group(1)) * 1024
        if avail < 2 * 2**30:
            subprocess.run(["pkill", "-KILL", "-P", str(proc.pid)])
            proc.kill()
            return "memory watchdog fired"
        time.sleep(0.1)
    return None


def run_case(tag, exercise, rel_files, human=False, cwd_in_folder=False):
    work = os.path.join(RUN, tag)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for ex in sorted({r.split("/")[0] for r in rel_files}):
        shutil.copytree(os.path.join(CORPUS, ex), os.path.join(work, ex), symlinks=True)
    with open(os.path.join(work, "notes.py"), "w") as f:
        f.write("# a neighbour in the parent folder\nNOTES = 1\n")
    home, practice, scratch = os.path.join(work, "home"), os.path.join(work, "practice"), os.path.join(work, "scratch")
    os.makedirs(home)
    os.makedirs(scratch)
    seed_home(home, practice)
    before_home = home_snapshot(home)
    before_files = digest_tree(work, skip={home})
    shutil.rmtree(MARKERS, ignore_errors=True)
    if os.path.exists(BIG):
        os.remove(BIG)
    files = [os.path.join(work, r) for r in rel_files]
    cmd = [CLI, "check", *files] + (["-e", exercise] if exercise else []) + ([] if human else ["--json"])
    env = dict(os.environ, ATTN_DRILL_HOME=home, TERM="xterm-256color")
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=os.path.dirname(files[0]) if cwd_in_folder else scratch, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    import threading
    wd = {}
    threading.Thread(target=lambda: wd.setdefault("msg", memory_watchdog(proc)), daemon=True).start()
    try:
        out, err = proc.communicate(timeout=180)
        hung = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        hung = True
    t_end = time.time()
    wall = t_end - t0
    time.sleep(6)
    res = {"tag": tag, "files": rel_files, "rc": proc.returncode, "wall_s": round(wall, 1), "hung_180s": hung}
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    if human:
        res["raw_esc_in_stdout"] = "\x1b" in stdout
        res["raw_bel_in_stdout"] = "\x07" in stdout
        res["raw_esc_in_stderr"] = "\x1b" in stderr
        res["stdout_head"] = stdout[:1500]
    else:
        objs = parse_lines(stdout)
        res["json_objects"] = len(objs)
        res["raw_esc_in_stdout"] = "\x1b" in stdout
        by_file = []
        for f in files:
            mine = [o for o in objs if o.get("file") == f]
            by_file.append(verdict(mine[0]) if mine else "no-json")
        # batches: the n-th object belongs to the n-th file (the same file may appear twice)
        res["verdicts"] = [verdict(o) for o in objs] if len(objs) == len(files) else by_file
        res["titles"] = [[(x["slug"], x.get("title", "")[:90], (x.get("message") or "")[:160])
                          for x in o.get("findings", [])[:2]] for o in objs]
    res["stderr_tail"] = stderr[-600:]
    res["late_marker_lines"] = late_marker_lines(t_end + 1.0)[:5]
    res["survivors"] = sorted(set(b11_pids()) | {p for p in marker_pids() if alive(p)})
    res["shadow_markers"] = sorted(os.path.basename(p) for p in glob.glob(MARKERS + "/shadow-*.log"))
    res["shadow_markers"] += sorted(set(re.findall(r"B11-SHADOW \w+", stdout + stderr)))
    res["port_47311_listening"] = listening(47311)
    res["big_file_left"] = os.path.exists(os.path.join(home, "big.bin"))
    res["leftover_files"] = leftovers()
    res["home_changed"] = home_losses(before_home, home_snapshot(home))
    after_files = digest_tree(work, skip={home})
    res["files_changed"] = sorted(k for k in set(before_files) | set(after_files)
                                  if before_files.get(k) != after_files.get(k) and not k.startswith(("scratch", "practice")))
    res["watchdog"] = wd.get("msg")
    for pid in res["survivors"]:  # clean up what this run left behind, one pid at a time
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for p in res["leftover_files"]:
        if os.path.isfile(p) and os.path.basename(p).startswith(("b11_", "attn_blind11_big")):
            os.remove(p)
    return res


def main(argv):
    os.makedirs(RUN, exist_ok=True)
    singles = [a for a in argv if a.endswith(".py")]
    only_batches = "--batches" in argv
    human_too = "--human" in argv
    if not singles and not only_batches:
        singles = sorted(os.path.relpath(p, CORPUS) for p in glob.glob(os.path.join(CORPUS, "*", "*.py"))
                         if "__" in os.path.basename(p))
    results = []
    for i, rel in enumerate(singles):
        ex, name = rel.split("/", 1)
        r = run_case("s%02d" % i, ex, [rel])
        r["expected"] = expected_slug(name)
        r["today"] = r["verdicts"][0] if r.get("verdicts") else "no-json"
        if human_too:
            h = run_case("h%02d" % i, ex, [rel], human=True)
            r["human_raw_esc_in_stdout"] = h["raw_esc_in_stdout"]
            r["human_raw_bel_in_stdout"] = h["raw_bel_in_stdout"]
            r["human_stdout_head"] = h["stdout_head"]
        results.append(r)
        print(json.dumps({k: r[k] for k in ("files", "expected", "today", "rc", "wall_s", "survivors", "late_marker_lines",
                                            "shadow_markers", "home_changed", "files_changed", "big_file_left", "leftover_files",
                                            "port_47311_listening", "raw_esc_in_stdout")}, ensure_ascii=True), flush=True)
    if only_batches or not [a for a in argv if a.endswith(".py")]:
        for name, (ex, rels) in BATCHES.items():
            r = run_case(name, ex, rels)
            r["expected"] = [expected_slug(os.path.basename(p)) for p in rels]
            results.append(r)
            print(json.dumps({k: r[k] for k in ("tag", "expected", "verdicts", "json_objects", "rc", "wall_s", "survivors",
                                                "shadow_markers", "home_changed", "files_changed")}, ensure_ascii=True),
                  flush=True)
        for name, (ex, rels) in CWD_IN_FOLDER.items():
            r = run_case(name, ex, rels, cwd_in_folder=True)
            r["expected"] = [expected_slug(os.path.basename(p)) for p in rels]
            results.append(r)
            print(json.dumps({k: r[k] for k in ("tag", "expected", "verdicts", "json_objects", "rc", "wall_s",
                                                "shadow_markers", "files_changed")}, ensure_ascii=True), flush=True)
    with open(os.path.join(RUN, "results.json"), "w") as f:
        json.dump(results, f, indent=1, ensure_ascii=True)


if __name__ == "__main__":
    main(sys.argv[1:])
