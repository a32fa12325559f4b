/* Theoretical occupancy in the browser: helpers/occupancy/calculator.py's occupancy() and
 * gpus.py's gpu_spec(), line for line.
 *
 * This file holds only the arithmetic. Every table it reads (architectures, products, carveouts,
 * the patterns that read a GPU's name, the axes of the impact curves) and every error message
 * comes from Python, in the data helpers/occupancy/browser.py writes next to it, so the two
 * cannot drift. tests/test_calculator_js.py checks it against helpers.occupancy in Chromium on a
 * sweep of every compute capability.
 *
 *   const calc = attentionProfiled.createOccupancyCalculator(data);
 *   calc.occupancy("H200", 384, 168, 134144)  // {activeBlocks, activeWarps, occupancy, limiters}
 *   calc.occupancy("9.0", 0, 32)              // throws Error("threads_per_block must be ...")
 */
(function (global) {
  "use strict";

  // --- Python's spelling of values, for the messages ---------------------------------------

  function pyFloatRepr(x) {
    if (Number.isNaN(x)) return "nan";
    if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
    // the shortest digits that read back as x (both languages find the same ones)
    const [mantissa, exp] = Math.abs(x).toExponential().split("e");
    const digits = mantissa.replace(".", "");
    const e = Number(exp);
    const sign = x < 0 ? "-" : "";
    if (e >= -4 && e < 16) {  // Python's repr: fixed notation for 1e-4 <= |x| < 1e16
      if (e >= 0) {
        const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
        const frac = digits.slice(e + 1) || "0";
        return sign + whole + "." + frac;
      }
      return sign + "0." + "0".repeat(-e - 1) + digits;
    }
    const m = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
    const a = Math.abs(e);
    return sign + m + "e" + (e < 0 ? "-" : "+") + (a < 10 ? "0" + a : String(a));
  }

  function pyStringRepr(s) {
    const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
    let out = "";
    for (const ch of s) {
      const code = ch.codePointAt(0);
      if (ch === "\\") out += "\\\\";
      else if (ch === quote) out += "\\" + quote;
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (ch === "\t") out += "\\t";
      else if (code < 0x20 || (code >= 0x7f && code < 0xa0)) out += "\\x" + code.toString(16).padStart(2, "0");
      else out += ch;
    }
    return quote + out + quote;
  }

  // repr(): a JavaScript value as Python would write the value it stands for (null is None,
  // an integral number an int, an array a tuple)
  function pyRepr(v) {
    if (v === null || v === undefined) return "None";
    if (typeof v === "boolean") return v ? "True" : "False";
    if (typeof v === "bigint") return v.toString();
    if (typeof v === "number") return Number.isInteger(v) ? BigInt(v).toString() : pyFloatRepr(v);
    if (typeof v === "string") return pyStringRepr(v);
    if (Array.isArray(v)) return "(" + v.map(pyRepr).join(", ") + (v.length === 1 ? ",)" : ")");
    return String(v);
  }

  // str(): as repr(), but a string is itself
  function pyStr(v) {
    return typeof v === "string" ? v : pyRepr(v);
  }

  // str.format for the templates Python hands over: {name} and {name!r}
  function format(template, values) {
    return template.replace(/\{(\w+)(!r)?\}/g, (_, key, r) => (r ? pyRepr(values[key]) : pyStr(values[key])));
  }

  // Python's round-half-even of the exact binary value, as f"{x:.{digits}f}" writes it (toFixed
  // rounds a tie such as 6.25 up, Python to the even digit)
  function pyFixed(x, digits) {
    const exact = Math.abs(x).toFixed(60);  // every double >= 2**-8 exactly; ties are short anyway
    const [whole, frac] = exact.split(".");
    const kept = whole + frac.slice(0, digits);
    const rest = frac.slice(digits);
    let n = BigInt(kept);
    const half = "5" + "0".repeat(rest.length - 1);
    if (rest > half || (rest === half && n % 2n === 1n)) n += 1n;
    let s = n.toString().padStart(digits + 1, "0");
    if (digits > 0) s = s.slice(0, -digits) + "." + s.slice(-digits);
    return (x < 0 && n !== 0n ? "-" : "") + s;
  }

  // --- the calculator ------------------------------------------------------------------------

  const SPEC = Symbol("GPUSpec");

  function createOccupancyCalculator(data) {
    const M = data.messages;
    const archs = new Map(data.architectures.map((a) => [a.capability, a]));
    const capabilityPatterns = data.names.capabilityPatterns.map((p) => new RegExp("^(?:" + p + ")$"));
    const vendorWords = new RegExp(data.names.vendorWords, "g");
    const excluded = new RegExp(data.names.excludedVariants);
    const allVariants = new Set(data.names.allVariantsShareSmCount);
    const products = data.products.map((p) => ({ ...p, regexps: p.patterns.map((q) => new RegExp(q)) }));

    function fail(key, values) {
      throw new Error(format(M[key], values));
    }

    function withProduct(arch, product) {
      return { ...arch, product: product ? product.name : null, smCount: product ? product.smCount : null,
               name: product ? product.name : arch.sm, [SPEC]: true };
    }

    function parseCapability(value) {
      if (Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === "number" && Number.isInteger(v))) {
        return [value[0], value[1]];
      }
      if (typeof value !== "string") return null;
      const text = value.trim().toLowerCase();
      for (const pattern of capabilityPatterns) {
        const m = text.match(pattern);
        if (m) return [parseInt(m[1], 10), parseInt(m[2], 10)];
      }
      return null;
    }

    function normalize(name) {
      name = name.toLowerCase().replace(/_/g, " ").replace(/-/g, " ");
      name = name.replace(vendorWords, " ");
      return name.replace(/\s+/g, " ").trim();
    }

    function productForDeviceName(name) {
      if (typeof name !== "string") return null;
      const norm = normalize(name);
      for (const product of products) {
        if (product.regexps.some((r) => r.test(norm))) {
          if (!allVariants.has(product.name) && excluded.test(norm)) return null;
          return product;
        }
      }
      return null;
    }

    // gpu_spec(): a compute capability ("9.0", "sm_90", [9, 0]) or a product ("H200", "NVIDIA H200")
    function gpuSpec(value) {
      if (value !== null && typeof value === "object" && value[SPEC]) return value;
      const capability = parseCapability(value);
      if (capability !== null) {
        const arch = archs.get(capability[0] + "." + capability[1]);
        if (arch) return withProduct(arch, null);
        fail("unknown_capability", { major: capability[0], minor: capability[1], known: data.knownGpus });
      }
      if (typeof value === "string") {
        const key = value.trim().toLowerCase();
        for (const product of products) {
          if (key === product.name.toLowerCase()) return withProduct(archs.get(product.capability), product);
        }
        const product = productForDeviceName(value);
        if (product) return withProduct(archs.get(product.capability), product);
      }
      fail("unknown_gpu", { value, known: data.knownGpus });
    }

    function asInt(value, what) {
      if (typeof value === "number" && Number.isInteger(value)) return value === 0 ? 0 : value;  // -0 is 0
      if (typeof value === "bigint") return Number(value);
      fail("not_integer", { what, value });
    }

    const roundUp = (x, unit) => Math.ceil(x / unit) * unit;
    const floorDiv = (a, b) => Math.floor(a / b);

    function smallestCarveoutHolding(spec, size) {
      for (const option of spec.sharedMemoryCarveouts) if (option >= size) return option;
      return null;
    }

    function preferredSharedMemory(spec, carveout) {
      const wanted = carveout === null ? spec.sharedMemoryPerSm : floorDiv(carveout * spec.sharedMemoryPerSm, 100);
      return smallestCarveoutHolding(spec, wanted);
    }

    // calculator.py's driver_shared_memory: the smallest supported size holding the blocks the
    // other three limits allow (at least one, at most what the largest size holds)
    function driverSharedMemory(spec, smemAllocated, otherBlocks) {
      if (smemAllocated <= 0) return spec.sharedMemoryCarveouts[0];
      const target = Math.max(1, Math.min(otherBlocks, floorDiv(spec.sharedMemoryPerSm, smemAllocated)));
      const chosen = smallestCarveoutHolding(spec, target * smemAllocated);
      return chosen === null ? spec.sharedMemoryPerSm : chosen;
    }

    function check(spec, threads, registers, smem, carveout, limit) {
      if (!(threads >= 1 && threads <= spec.maxThreadsPerBlock)) fail("threads", { limit: spec.maxThreadsPerBlock, value: threads });
      if (!(registers >= 0 && registers <= spec.maxRegistersPerThread)) fail("registers", { limit: spec.maxRegistersPerThread, value: registers });
      if (smem < 0) fail("shared_memory_negative", { value: smem });
      if (smem > spec.sharedMemoryPerBlockOptin) fail("shared_memory_optin", { value: smem, gpu: spec.name, limit: spec.sharedMemoryPerBlockOptin });
      if (carveout !== null && !(carveout >= 0 && carveout <= 100)) fail("carveout", { value: carveout });
      if (!(typeof limit === "string" && data.sharedMemoryLimits.includes(limit))) {
        fail("shared_memory_limit", { limits: data.sharedMemoryLimits, value: limit });
      }
    }

    // occupancy() with everything it works out: the result the page shows
    function detail(gpu, threadsPerBlock, registersPerThread, sharedMemoryPerBlock, options) {
      const opts = options || {};
      const spec = gpuSpec(gpu);
      const threads = asInt(threadsPerBlock, "threads_per_block");
      const registers = asInt(registersPerThread, "registers_per_thread");
      const smem = asInt(sharedMemoryPerBlock === undefined ? 0 : sharedMemoryPerBlock, "shared_memory_per_block");
      let carveout = opts.carveout === undefined ? null : opts.carveout;
      if (carveout !== null) carveout = asInt(carveout, "carveout");
      const limit = opts.sharedMemoryLimit === undefined ? "opt-in" : opts.sharedMemoryLimit;
      check(spec, threads, registers, smem, carveout, limit);

      const warpsPerBlock = Math.ceil(threads / spec.warpSize);
      const warpLimit = floorDiv(spec.maxWarpsPerSm, warpsPerBlock);

      const regsPerWarp = roundUp(registers * spec.warpSize, spec.registerAllocationUnit);
      const regsPerBlock = regsPerWarp * warpsPerBlock;
      const regsChecked = regsPerWarp * roundUp(warpsPerBlock, spec.smSubpartitions);
      let registerLimit;
      if (regsChecked > spec.maxRegistersPerBlock || regsPerBlock > spec.maxRegistersPerBlock) registerLimit = 0;
      else if (regsPerWarp === 0) registerLimit = data.unlimited;
      else {
        const warpsPerSubpartition = floorDiv(floorDiv(spec.registersPerSm, spec.smSubpartitions), regsPerWarp);
        registerLimit = floorDiv(warpsPerSubpartition * spec.smSubpartitions, warpsPerBlock);
      }

      const smemAllocated = roundUp(smem + spec.reservedSharedMemoryPerBlock, spec.sharedMemoryAllocationUnit);
      const perBlockCap = (limit === "opt-in" ? spec.sharedMemoryPerBlockOptin : spec.sharedMemoryPerBlockDefault)
        + spec.reservedSharedMemoryPerBlock;
      // the SM's shared memory: the kernel's carveout preference (grown to hold one block), or with
      // none the driver's pick, modelled as calculator.py's driver_shared_memory does it
      const otherBlocks = Math.min(warpLimit, registerLimit, spec.maxBlocksPerSm);
      let smemPerSm, source;
      if (carveout !== null) {
        source = "preference";
        smemPerSm = preferredSharedMemory(spec, carveout);
        if (smemPerSm < smemAllocated && smemAllocated <= perBlockCap) smemPerSm = smallestCarveoutHolding(spec, smemAllocated);
      } else {
        source = "driver";
        smemPerSm = smemAllocated > perBlockCap ? spec.sharedMemoryPerSm : driverSharedMemory(spec, smemAllocated, otherBlocks);
      }
      let smemLimit;
      if (smemAllocated > perBlockCap) smemLimit = 0;
      else smemLimit = smemAllocated > 0 ? floorDiv(smemPerSm, smemAllocated) : data.unlimited;

      const blockLimits = { warps: warpLimit, registers: registerLimit, shared_memory: smemLimit, blocks: spec.maxBlocksPerSm };
      const activeBlocks = Math.min(...data.limiters.map((k) => blockLimits[k]));
      const limiters = data.limiters.filter((k) => blockLimits[k] === activeBlocks);
      const activeWarps = activeBlocks * warpsPerBlock;
      const maxWarps = spec.maxWarpsPerSm;
      return {
        gpu: spec, threadsPerBlock: threads, registersPerThread: registers, sharedMemoryPerBlock: smem,
        carveout, sharedMemoryLimit: limit, sharedMemorySource: source, activeBlocks, activeWarps, maxWarps,
        occupancy: activeWarps / maxWarps, limiters, blockLimits, warpsPerBlock,
        registersPerWarp: regsPerWarp, registersPerBlock: regsPerBlock,
        sharedMemoryAllocatedPerBlock: smemAllocated, sharedMemoryPerSm: smemPerSm,
        utilization: {
          warps: activeWarps / maxWarps,
          registers: (activeBlocks * regsPerBlock) / spec.registersPerSm,
          shared_memory: smemPerSm ? (activeBlocks * smemAllocated) / smemPerSm : 0,
          blocks: activeBlocks / spec.maxBlocksPerSm,
        },
      };
    }

    // the fixed API: window.attentionProfiled.occupancy(gpu, threads, registers, smem, {carveout, sharedMemoryLimit})
    function occupancy(gpu, threadsPerBlock, registersPerThread, sharedMemoryPerBlock, options) {
      const r = detail(gpu, threadsPerBlock, registersPerThread, sharedMemoryPerBlock, options);
      return { activeBlocks: r.activeBlocks, activeWarps: r.activeWarps, occupancy: r.occupancy, limiters: r.limiters.slice() };
    }

    // the message occupancy() gives for one bad value, the others being valid; null if it is valid
    function fieldMessage(gpu, field, value) {
      const args = { threads: 1, registers: 0, shared_memory: 0 };
      args[field] = value;
      try {
        detail(gpu, args.threads, args.registers, args.shared_memory);
        return null;
      } catch (err) {
        return err.message;
      }
    }

    // charts.impact_series(): each of the three varied alone from the current configuration
    function impactSeries(gpu, threads, registers, smem, options) {
      const spec = gpuSpec(gpu);
      const now = { threads, registers, shared_memory: smem };
      const out = {};
      for (const what of ["threads", "registers", "shared_memory"]) {
        const axis = spec.impact[what];
        const [start, stop, step] = axis.range;
        const set = new Set(axis.extra);
        for (let x = start; x < stop; x += step) set.add(x);
        set.add(now[what]);
        const xs = [...set].sort((a, b) => a - b);
        const results = xs.map((x) => {
          const a = { ...now, [what]: x };
          return detail(spec, a.threads, a.registers, a.shared_memory, options);
        });
        out[what] = { xs, results };
      }
      return out;
    }

    return { occupancy, detail, gpuSpec, fieldMessage, impactSeries, productForDeviceName, data };
  }

  const ns = (global.attentionProfiled = global.attentionProfiled || {});
  ns.createOccupancyCalculator = createOccupancyCalculator;
  ns.py = { repr: pyRepr, str: pyStr, format, fixed: pyFixed };
})(typeof window !== "undefined" ? window : globalThis);
