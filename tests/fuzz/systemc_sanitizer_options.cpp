// Sanitizer defaults of the fuzz targets that run the SystemC model (mmio, wire, mpqemu): no leak checks.
// SystemC runs its processes on stacks of its own (QuickThreads), which LeakSanitizer does not scan, so objects
// reachable only from those stacks, and libFuzzer's own, are reported as leaks. ASan's other checks and UBSan stay
// on. (The sanitizer runtime calls this hook at start-up; ASAN_OPTIONS still overrides it.)
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
