// A stand-in for libdrsim.so in drsim_run_test: a library to preload whose mapping the test can find in
// the program's /proc/self/maps. It does nothing else.
int drsim_run_test_preload_marker(void) { return 41; }
