// The Catch2 runner of the single test executable (compiled once, linked with every test).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
