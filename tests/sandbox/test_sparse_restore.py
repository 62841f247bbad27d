"""The runner restores a memory snapshot without writing the pages that are zero both in the
snapshot and in the heap (runner.mjs `sparseHeapRestore`): the heap must end byte for byte as
Pyodide's own full copy (`Module.HEAP8.set(bytes)`) leaves it. The function is taken from
runner.mjs as it ships and run in plain Node on a heap with data already in it (a module's
data segments are written before the restore), against a full copy of the same bytes."""

from __future__ import annotations

import re
import subprocess

from flow_kernel.sandbox.install import RUNNER
from flow_kernel.sandbox.node import find_node

CHECK = r"""
const PAGE = 4096;
const snapshotBytes = Buffer.alloc(128 + 9 * PAGE + 100);  // a header, 9 pages and a partial one
const source = snapshotBytes.subarray(128);                 // what Pyodide copies: past the header
source[5] = 1;                                  // page 0: data
source[3 * PAGE + 4095] = 7;                    // page 3: its last byte
source.fill(9, 6 * PAGE, 8 * PAGE);             // pages 6-7: a run
source[9 * PAGE + 50] = 3;                      // the partial last page
function heapWithData() {
  const memory = new WebAssembly.Memory({ initial: 1 });
  const heap = new Int8Array(memory.buffer);
  heap[2 * PAGE + 17] = 42;                     // a "data segment" where the snapshot is zero
  heap[6 * PAGE] = 5;                           // and one the snapshot overwrites
  return heap;
}
const expected = heapWithData();
expected.set(source);                           // the full copy, before the shadowing
const removeSparseSet = sparseHeapRestore(snapshotBytes.buffer);
const sparse = heapWithData();
sparse.set(source);                             // Pyodide's call, through the shadowed set
const other = heapWithData();
other.set(new Uint8Array(10).fill(1), 100);     // any other copy: the full set, with its offset
removeSparseSet();
const restored = !Object.prototype.hasOwnProperty.call(Int8Array.prototype, "set");
const same = Buffer.compare(Buffer.from(sparse.buffer), Buffer.from(expected.buffer)) === 0;
console.log(JSON.stringify({ same, restored, other: other[100] === 1 && other[109] === 1 && other[110] === 0,
                             stale: sparse[2 * PAGE + 17] }));
"""


def _function(name: str) -> str:
    text = RUNNER.read_text(encoding="utf-8")
    match = re.search(rf"^function {name}\(.*?^}}\n", text, re.S | re.M)
    assert match, f"{name} is not in runner.mjs"
    return match.group(0)


def test_the_sparse_restore_leaves_the_heap_as_a_full_copy() -> None:
    script = _function("sparseHeapRestore") + CHECK
    out = subprocess.run([find_node().path, "--input-type=module", "-e", script], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    # `stale`: the data written before the restore where the snapshot has a zero page is
    # overwritten with zero, as the full copy does (a page is skipped only when both are zero)
    assert out.stdout.strip() == '{"same":true,"restored":true,"other":true,"stale":0}'
