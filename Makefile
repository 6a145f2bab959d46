# SpringSkin — two commands on a fresh Debian 12 machine:
#   make demo   installs what it needs, builds, runs the main job on a real character
#   make test   installs what it needs, builds, runs every test
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
MODELS  ?= /usr/share/assimp/models
DEMO_IN ?= $(MODELS)/X/BCN_Epileptic.X
CLI      = $(BUILD)/springskin

.PHONY: all deps configure build demo test bench bench-blender install-addon clean

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
