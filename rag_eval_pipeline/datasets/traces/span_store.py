"""Each trace file's spilled spans kept once, so a version that gains a file parses only it.

The Collector rotates its file daily: a version collecting traces gains a file a day, and
every earlier file is unchanged. Parsing (JSON or protobuf, decompression, reducing spans) is
the expensive part of reading `traces/`; its result, a file's `SpannedFile` (the spans in
the fixed `BUCKETS` bucket files, and the feedback annotations), is stored under the stage root
as `<stage>/spans-<key>/<generation>/` with `<stage>/spans-<key>/_staged.json` (written last),
published as a staged copy is (`staged_logs`): built aside, renamed into place, a second
writer keeping the first one's. The key is the digest of the file's bytes, its label (spans
carry it in their error sources), the spill format and the limits the reader applies
(`RAG_EVAL_MAX_ID_CHARS`, `RAG_EVAL_MAX_RECORD_BYTES`). A file with problems stores nothing.
Entries are built in writer-named temporaries, read through `stage_entries.read_published`
(which records their use) and removed by the stage's cleanup rule once unused; a manifest that
does not read is a warning and the file is parsed again.

Only a local stage root holds a store; on an object store the files are spilled to a
temporary folder each time (`buckets.spilled_traces` without a store).
"""

from __future__ import annotations

import hashlib
import pickle
import tempfile
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pydantic import BaseModel
from upath import UPath

from rag_eval_pipeline.datasets.lines import max_record_bytes
from rag_eval_pipeline.datasets.staged_logs import STAGED_MANIFEST, publish_folder
from rag_eval_pipeline.datasets.traces.buckets import SPILL_FORMAT, SpannedFile, spill_file
from rag_eval_pipeline.datasets.traces.detect import Reader
from rag_eval_pipeline.datasets.validation import max_id_chars
from rag_eval_pipeline.storage.objects import is_local, temporary_prefix
from rag_eval_pipeline.storage.parquet import GENERATION_PREFIX
from rag_eval_pipeline.storage.stage_entries import (
    made_scratch_folder,
    parse_manifest,
    read_manifest,
    read_published,
)

SPANS_PREFIX = "spans-"
FEEDBACK_FILE = "feedback.pickle"
READ_BYTES = 2**20
REPARSED = "the file is parsed again"


def file_key(path: Path, label: str) -> str:
    """The stored spans' name for the trace file at `path` (see module)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{label}\0{SPILL_FORMAT}\0{max_id_chars()}\0{max_record_bytes()}\0".encode())
    with open(path, "rb") as handle:
        while block := handle.read(READ_BYTES):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class SpanStore:
    """The stored spans of trace files, under a local stage root."""

    root: Path

    @staticmethod
    def under(stage_root: UPath) -> SpanStore | None:
        """The store under a stage root (`LogStage.root`); None on an object store."""
        return SpanStore(Path(stage_root.path)) if is_local(stage_root) else None

    def spilled(self, path: Path, label: str, reader: Reader) -> SpannedFile:
        """The file's stored spans, parsed and stored first when none are; a file's problems
        raise (`DatasetError`) and store nothing."""
        key = SPANS_PREFIX + file_key(path, label)
        found = self._find(key)
        if found is not None:
            return found
        scratch = made_scratch_folder(UPath(self.root))
        prefix = temporary_prefix(self.root / key)
        with tempfile.TemporaryDirectory(dir=scratch, prefix=prefix, suffix=".tmp") as work:
            built = Path(work) / key
            generation = f"{GENERATION_PREFIX}{uuid.uuid4().hex}"
            spilled = spill_file(path, label, reader, built / generation)
            with open(built / generation / FEEDBACK_FILE, "wb") as handle:
                pickle.dump(spilled.feedback, handle, pickle.HIGHEST_PROTOCOL)
            manifest = SpansManifest(generation=generation, sizes=spilled.sizes, label=label)
            (built / STAGED_MANIFEST).write_text(manifest.model_dump_json())
            publish_folder(built, UPath(self.root), partial(read_manifest, SpansManifest))
        found = self._find(key)
        assert found is not None, f"stored spans {key} vanished"
        return found

    def _find(self, key: str) -> SpannedFile | None:
        """The stored spans `key`, their use recorded (`read_published`); None when none are
        published or the manifest does not read (a warning: the file is parsed again)."""
        entry = UPath(self.root / key)
        data = read_published(entry, STAGED_MANIFEST)
        path = entry / STAGED_MANIFEST
        found = None if data is None else parse_manifest(SpansManifest, data, path, REPARSED)
        if found is None:
            return None
        folder = self.root / key / found.generation
        with open(folder / FEEDBACK_FILE, "rb") as handle:
            feedback = pickle.load(handle)
        return SpannedFile(folder, feedback, list(found.sizes))


class SpansManifest(BaseModel):
    """A stored file's `_staged.json`: its generation, the bytes of each bucket, its label."""

    generation: str
    sizes: list[int]
    label: str
