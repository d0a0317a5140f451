//===- Passes.td - partitioning passes ----------------------*- tablegen -*-===//

#ifndef ORTC_COMPILER_PARTITION_PASSES
#define ORTC_COMPILER_PARTITION_PASSES

include "mlir/Pass/PassBase.td"

def OrtcPartitionWithSpecEps : Pass<"ortc-partition-spec", "mlir::ModuleOp"> {
  let summary = "Partition @main_graph over EPs described by spec strings (tests)";
  let description = [{
    Runs the partitioner (compiler/Partition/Partitioner.h) with SpecEps, so
    that lit tests can state each EP's support and costs:

      -ortc-partition-spec="eps=gpu_ep@cuda:MatMul=1:*=40,cpu_ep@cpu:*=10 claims=cpu_ep:Relu"

    `eps` lists the EPs in priority order (see SpecEp.h for the syntax);
    `claims` lists <ep>:<OpType> pairs taken by claimNodes. With `report` set
    to `text` or `json`, the placement report is printed to stderr.
  }];
  let options = [
    ListOption<"epSpecs", "eps", "std::string", "EP specs in priority order">,
    ListOption<"claimSpecs", "claims", "std::string", "<ep>:<OpType> claims">,
    Option<"allowUnclaimed", "allow-unclaimed", "bool", /*default=*/"false",
           "Leave nodes no EP supports in @main_graph">,
    Option<"reportFormat", "report", "std::string", /*default=*/"\"\"",
           "Print the placement report to stderr: text or json">,
  ];
}

#endif // ORTC_COMPILER_PARTITION_PASSES
