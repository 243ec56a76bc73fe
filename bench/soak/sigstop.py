"""Soak: a stopped rank is named, and nothing else blamed, every time.

Runs hang_test's case `blamed_when_rank_2_stops` RUNS times under `unitrain launch` and RUNS
times under torchrun's c10d rendezvous (where rank 0 hosts the store the ranks read each other's
notices from): 3 workers, rank 2 SIGSTOPped after its step-10 checkpoint, each survivor's error
read from its flight record. Prints one line a run and a tally; exits 1 unless every survivor of
every run named rank 2 and no other rank. CI runs one of each (hang_test.py); this is the soak.

    /usr/bin/python3 bench/soak/sigstop.py build [RUNS=20]
"""
import os
import sys
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))

import common  # noqa: E402
import hang_test  # noqa: E402


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(SOURCE, "build"))
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    common.BIN = os.path.join(build, "unitrain")
    common.BUILD = build
    bad = 0
    for torchrun in (False, True):
        how = "torchrun" if torchrun else "launch"
        for i in range(runs):
            case = hang_test.Hang("test_a_stopped_worker_alone_is_named_under_launch_and_torchrun")
            case.setUp()
            t0 = time.time()
            try:
                said, _ = case.blamed_when_rank_2_stops(29811 + i % 20 + (20 if torchrun else 0),
                                                         torchrun)
                blamed = {r: sorted(hang_test.blamed(e)) for r, e in said.items()}
                ok = all(b == [2] for b in blamed.values())
                line = f"blamed {blamed}"
            except Exception as e:  # noqa: BLE001  a run that failed otherwise counts as bad
                ok, said, line = False, {}, f"failed: {str(e).splitlines()[0][:200]}"
            finally:
                case.tearDown()
            bad += not ok
            print(f"{how:8} run {i + 1:2}/{runs}: {'ok ' if ok else 'BAD'} {line} "
                  f"({time.time() - t0:.0f} s)", flush=True)
            if not ok:
                for r, e in said.items():
                    print(f"    rank {r}: {e}", flush=True)
    print(f"{2 * runs - bad} of {2 * runs} runs named rank 2 alone")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
