"""What ``threads`` and ``status`` print, read without decoding a thread's large channels.

A thread's research bundle lists every source research read, and the handoff envelope
repeats them: both grow with the corpus (10,000 files: 8.5 MB of channel values a
checkpoint), and LangGraph's ``list`` and ``get_state`` decode all of it, so listing a
store holding one such thread took a minute. A listing reads instead:

- thread ids and checkpoint counts with one SQL query each, decoding no checkpoint;
- the latest checkpoint through :class:`GlanceSaver` (``glance``), which hands LangGraph
  that checkpoint with the large channels left out, still encoded. ``get_state`` on a
  graph compiled with it gives ``next``, the interrupts, the metadata and the small
  channels as the full read does, since what runs next depends on channel versions, not
  on the values left out;
- the number of facts, counted in the stored bundle without building the bundle
  (``packed``).

How the large values are left out depends on the database: ``sqlite`` and ``postgres``.
"""

from app.storage.thread_reads.glance import GlanceSaver

__all__ = ["GlanceSaver"]
