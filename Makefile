# SpringSkin — two commands on a fresh Debian 12 machine:
#   make demo   installs what it needs, builds, runs the main job on a real character
#   make test   installs what it needs, builds, runs every test
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
MODELS  ?= /usr/share/assimp/models
DEMO_IN ?= $(MODELS)/X/BCN_Epileptic.X
CLI      = $(BUILD)/springskin

.PHONY: all deps configure build demo test sanitize fuzz bench bench-blender install-addon clean

all: build

deps:
	@bash .ci/deps.sh

$(BUILD)/CMakeCache.txt: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	mkdir -p $(BUILD)/demo
	$(CLI) info $(DEMO_IN)
	$(CLI) check $(DEMO_IN)
	$(CLI) bake $(DEMO_IN) -o $(BUILD)/demo/bcn_epileptic_lbs.pc2 --method lbs
	$(CLI) bake $(DEMO_IN) -o $(BUILD)/demo/bcn_epileptic_lbs.abc --method lbs --normals
	$(CLI) bake $(DEMO_IN) -o $(BUILD)/demo/bcn_epileptic_dqs.pc2 --method dqs
# LBS and DQS side by side at the frame where they differ most
# (--frame auto: largest distance of one vertex between the two methods).
	$(CLI) preview $(DEMO_IN) -o $(BUILD)/demo/preview.png --methods lbs,dqs --frame auto
	@echo "demo: outputs in $(BUILD)/demo/"

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Sanitizer job (issue #19): ASan + UBSan build of the core, the CLI, the C
# tests and the Python extension; the C tests and the Python tests run
# under it, but for Blender's and the window's (an instrumented module in
# an uninstrumented Blender) and test_spring_quality (minutes under ASan;
# its kernels run in the other tests). Leaks of Debian's libraries are
# suppressed in tests/sanitizers/lsan.supp, with reasons.
SAN_BUILD  ?= build-sanitize
SAN_SKIP   ?= blender|gui|test_spring_quality
SAN_ENV     = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
              LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp \
              UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
sanitize: deps
	cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSSK_SANITIZE=address,undefined -DSSK_BUILD_BENCH=OFF
	cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && $(SAN_ENV) ctest --output-on-failure -j $(JOBS) -E '$(SAN_SKIP)'

# Fuzzing (issue #19): libFuzzer targets (clang, ASan + UBSan) of the graph
# parser, the binding loader and the CLI's options, each for FUZZ_SECONDS
# from its corpus in tests/fuzz/corpus/ (new inputs go to the build
# directory; a crash leaves BUILD/crash-* and fails).
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSSK_SANITIZE=address,undefined -DSSK_FUZZ=ON -DSSK_BUILD_TESTS=OFF \
	  -DSSK_BUILD_PYTHON=OFF -DSSK_BUILD_BENCH=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_graph fuzz_binding fuzz_cli
	@for t in graph binding cli; do \
	  mkdir -p $(abspath $(FUZZ_BUILD))/corpus-$$t; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  $(SAN_ENV) $(FUZZ_BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(abspath $(FUZZ_BUILD))/crash-$$t- \
	    $(abspath $(FUZZ_BUILD))/corpus-$$t $(CURDIR)/tests/fuzz/corpus/$$t \
	    > $(FUZZ_BUILD)/fuzz_$$t.log 2>&1 \
	    || { tail -60 $(FUZZ_BUILD)/fuzz_$$t.log; exit 1; }; \
	  grep -E "^Done|stat::number_of_executed_units" $(FUZZ_BUILD)/fuzz_$$t.log; \
	done

bench: build
	$(BUILD)/bench/bench_skinning

# Blender's Armature modifier and ours on the same generated limbs, one run.
bench-blender: build
	blender -b --factory-startup --python bench/blender_armature.py -- \
	  --sizes 10000,100000,1000000 --ours $(BUILD)/bench/bench_skinning

# Installs $(BUILD)/springskin_blender.zip (made by `build`) into the user's
# Blender and enables it. Not --factory-startup: saving the preferences of a
# factory session would reset every other user preference.
install-addon: build
	blender -b --python-exit-code 1 --python-expr "import bpy; \
	bpy.ops.preferences.addon_install(filepath='$(abspath $(BUILD))/springskin_blender.zip', overwrite=True); \
	bpy.ops.preferences.addon_enable(module='springskin_blender'); \
	bpy.ops.wm.save_userpref(); \
	print('springskin_blender installed and enabled')"

clean:
	rm -rf $(BUILD)
