"""analysis/: what saved and measured documents mean, between the measuring rooms (profile/,
diagnose/, compiler/, measure/) and report/: the judgments a report states (was the machine
busy or disturbed, do in-run and e2e agree, which kernel is far below its neighbours, what a
saved diagnosis attributes), computed here and handed to report/ as typed results to render.
Counterpart: none in TVM; its profiling ``Report`` rendered numbers and judged none of them.
"""
