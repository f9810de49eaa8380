"""hw-lab: the benchmarks, probe and recorder behind hw-lab/run."""
VERSION = "0.1.0"
