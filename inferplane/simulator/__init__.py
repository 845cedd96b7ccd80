"""The simulator: simulated clouds and KWOK-shaped target clusters (nodes, the stack's workloads, DRA
ResourceSlices and allocation, the engines), run as a controller the runtime hosts; and the audits
that judge what it placed."""
