"""The pickers measured: synthetic layered-DAG problems, the scaling study, the IOPDDL contest
files, the primal search on instances it was not tuned on, the exact picker's two methods."""
