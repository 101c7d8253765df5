"""Inductor's CPU modes over module_db: cpp_wrapper, freezing, max-autotune, AOTInductor, trace and caches."""
