"""A test whose tool or data is missing fails with the install hint: none skips quietly and counts
as passed (scripts/test installs everything the tests need)."""
import os
import re

import common


class NoQuietSkips(common.Case):
    def test_no_test_skips(self):
        pattern = re.compile(r"GTEST_SKIP|skipTest\(|unittest\.skip|@skip")
        found = []
        for root, _, files in os.walk(os.path.join(common.SOURCE, "tests")):
            for name in files:
                if not name.endswith((".cpp", ".h", ".py")) or name == os.path.basename(__file__):
                    continue
                path = os.path.join(root, name)
                with open(path, errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        if pattern.search(line):
                            found.append(f"{os.path.relpath(path, common.SOURCE)}:{number}: {line.strip()}")
        self.assertEqual(found, [], "tests that skip instead of failing:\n" + "\n".join(found))


if __name__ == "__main__":
    common.main()
