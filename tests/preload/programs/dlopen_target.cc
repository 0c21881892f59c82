// Found only through dlopen_origin_lib's RUNPATH.
extern "C" int TargetAnswer() { return 42; }
