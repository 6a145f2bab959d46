"""Runs one headless Blender test (the CTest command of tests/blender/test_*.py):

    /usr/bin/python3 tests/blender/run_headless.py BLENDER ARGS...

The test's own verdict decides: its exit status passes through. One case
is run again, once: Blender dying of a signal (a segfault in Blender
3.4's background mode, seen once in about a dozen runs of
test_conformance, between two file imports, with an empty backtrace).
The crash, its signal and Blender's crash report are printed, so a rerun
is never silent; a crash that repeats fails the test.
"""

import re
import signal
import subprocess
import sys


def main():
    command = sys.argv[1:]
    for attempt in (1, 2):
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = proc.stdout.decode("utf-8", "replace")
        sys.stdout.write(out)
        sys.stdout.flush()
        code = proc.returncode
        if code >= 0:
            sys.exit(code)
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "signal %d" % -code
        report = re.search(r"Writing: (\S+crash\S*)", out)
        print("run_headless: Blender died of %s (attempt %d)" % (name, attempt))
        if report:
            try:
                with open(report.group(1)) as f:
                    print("run_headless: Blender's crash report:\n" + f.read())
            except OSError:
                pass
        if attempt == 2:
            print("run_headless: the crash repeated: failing")
            sys.exit(128 - code)
        print("run_headless: running the test once more", flush=True)


if __name__ == "__main__":
    main()
