"""A C test program linked both ways a user links the C API."""

def c_test_linked_both_ways(name, src, headers):
    """Two cc_tests of the C program `src` (with `headers`, from this package).

    `name` links it statically with //capi:capi; `name` with "_test" turned into "_shared_test" links it
    against libdrsim_mlx5dv.so, as a program built outside Bazel does.
    """
    if not name.endswith("_test"):
        fail("c_test_linked_both_ways: name must end in _test: " + name)
    native.cc_test(
        name = name,
        size = "small",
        srcs = headers + [src],
        copts = ["-std=c11"],
        deps = [":capi"],
    )
    native.cc_test(
        name = name[:-len("_test")] + "_shared_test",
        size = "small",
        srcs = headers + [src, "drsim.h", ":libdrsim_mlx5dv.so"],
        copts = ["-std=c11"],
        deps = ["@rdma_core//:headers"],
    )
