"""bench/servers.sh, step 3: prints the config that runs compatnets.finetune evaluate (K = 3
fine-tunes, each backbone's first standing in for the merge) 10 times per backbone of the
real library LIBRARY, spawned, then served; PYTHON is the project's python folder.

    /usr/bin/python3 bench/servers_evaluate_config.py LIBRARY PYTHON > CONFIG
"""
import os, sys
lib, python = sys.argv[1], sys.argv[2]
fts = sorted(f[:-12] for f in os.listdir(f"{lib}/finetunes") if f.endswith(".safetensors") and "@" not in f)
backbones = sorted({f.rsplit("_", 1)[0] for f in fts})
args = {}
for b in backbones:
    mine = [f for f in fts if f.rsplit("_", 1)[0] == b][:3]
    tasks = " ".join(f.rsplit("_", 1)[1] for f in mine)
    args[b] = (f"compatnets.finetune evaluate --checkpoint {lib}/finetunes/{mine[0]}.safetensors "
               f"--base {lib}/models/{b}.safetensors --finetuned "
               + " ".join(f"{lib}/finetunes/{m}.safetensors" for m in mine)
               + f" --tasks {tasks} --data {lib}/data --models {lib} --out {{result}}")
print("experiment: {name: bench-evaluate, seed: 1}\ntasks:")
for b, a in args.items():
    for way in ("spawned", "served"):
        print(f"  - name: {way}_{b}\n    kind: command\n    grid: {{rep: {{range: [0, 10]}}}}")
        if way == "served":
            print(f"    after: [spawned_{b}]\n    server: cd {python} && exec /usr/bin/python3 -m compatnets.serve")
            print(f"    command: {a}")
        else:
            print(f"    command: cd {python} && /usr/bin/python3 -m {a}")
        print("    outputs: {acc_1: float}")
