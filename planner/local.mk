# BORG's planner: the master access graph into a BOPT layout plan.
noinst_LIBRARIES += planner/libhyplanner.a
planner_libhyplanner_a_SOURCES = planner/planner.c
