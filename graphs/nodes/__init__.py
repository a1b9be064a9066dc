"""The workflow's nodes, one module each: agents do the work, these own the flow.

Each module declares its node with ``graphs.declare.node``: the channels it reads and
writes, and how it behaves. ``graphs.graph`` wires them.
"""
