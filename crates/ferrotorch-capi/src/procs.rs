//! The table behind `ft_get_proc` (Note [Plugin ABI]): every function of
//! `ferrotorch.h` by name. `tests/header.rs` checks that it lists each
//! function the header declares.

use std::ffi::c_void;

/// A function's name and address.
pub(crate) struct Proc(pub(crate) &'static str, pub(crate) *const c_void);

// SAFETY: function addresses, never written.
unsafe impl Sync for Proc {}

/// `(name, address)` of every `ft_*` function.
pub(crate) static PROCS: &[Proc] = &[
    Proc("ft_version", crate::ft_version as *const c_void),
    Proc(
        "ft_tensor_requires_grad",
        crate::autograd::ft_tensor_requires_grad as *const c_void,
    ),
    Proc(
        "ft_tensor_set_requires_grad",
        crate::autograd::ft_tensor_set_requires_grad as *const c_void,
    ),
    Proc(
        "ft_tensor_grad",
        crate::autograd::ft_tensor_grad as *const c_void,
    ),
    Proc(
        "ft_tensor_set_grad",
        crate::autograd::ft_tensor_set_grad as *const c_void,
    ),
    Proc(
        "ft_tensor_backward",
        crate::autograd::ft_tensor_backward as *const c_void,
    ),
    Proc(
        "ft_tensor_detach",
        crate::autograd::ft_tensor_detach as *const c_void,
    ),
    Proc(
        "ft_is_grad_enabled",
        crate::autograd::ft_is_grad_enabled as *const c_void,
    ),
    Proc(
        "ft_set_grad_enabled",
        crate::autograd::ft_set_grad_enabled as *const c_void,
    ),
    Proc(
        "ft_data_loader_new",
        crate::data::ft_data_loader_new as *const c_void,
    ),
    Proc(
        "ft_data_loader_len",
        crate::data::ft_data_loader_len as *const c_void,
    ),
    Proc(
        "ft_data_loader_next",
        crate::data::ft_data_loader_next as *const c_void,
    ),
    Proc(
        "ft_data_loader_free",
        crate::data::ft_data_loader_free as *const c_void,
    ),
    Proc(
        "ft_tensor_to_dlpack",
        crate::dlpack::ft_tensor_to_dlpack as *const c_void,
    ),
    Proc(
        "ft_tensor_from_dlpack",
        crate::dlpack::ft_tensor_from_dlpack as *const c_void,
    ),
    Proc("ft_nn_linear", crate::nn::ft_nn_linear as *const c_void),
    Proc("ft_nn_conv2d", crate::nn::ft_nn_conv2d as *const c_void),
    Proc(
        "ft_nn_batchnorm2d",
        crate::nn::ft_nn_batchnorm2d as *const c_void,
    ),
    Proc(
        "ft_nn_embedding",
        crate::nn::ft_nn_embedding as *const c_void,
    ),
    Proc(
        "ft_nn_maxpool2d",
        crate::nn::ft_nn_maxpool2d as *const c_void,
    ),
    Proc("ft_nn_dropout", crate::nn::ft_nn_dropout as *const c_void),
    Proc("ft_nn_flatten", crate::nn::ft_nn_flatten as *const c_void),
    Proc("ft_nn_relu", crate::nn::ft_nn_relu as *const c_void),
    Proc("ft_nn_tanh", crate::nn::ft_nn_tanh as *const c_void),
    Proc("ft_nn_sigmoid", crate::nn::ft_nn_sigmoid as *const c_void),
    Proc(
        "ft_nn_sequential",
        crate::nn::ft_nn_sequential as *const c_void,
    ),
    Proc(
        "ft_module_forward",
        crate::nn::ft_module_forward as *const c_void,
    ),
    Proc("ft_module_free", crate::nn::ft_module_free as *const c_void),
    Proc(
        "ft_module_train",
        crate::nn::ft_module_train as *const c_void,
    ),
    Proc(
        "ft_module_zero_grad",
        crate::nn::ft_module_zero_grad as *const c_void,
    ),
    Proc(
        "ft_module_parameters",
        crate::nn::ft_module_parameters as *const c_void,
    ),
    Proc(
        "ft_module_state_dict",
        crate::nn::ft_module_state_dict as *const c_void,
    ),
    Proc(
        "ft_module_load_state_dict",
        crate::nn::ft_module_load_state_dict as *const c_void,
    ),
    Proc(
        "ft_module_to_string",
        crate::nn::ft_module_to_string as *const c_void,
    ),
    Proc("ft_op_find", crate::ops::ft_op_find as *const c_void),
    Proc("ft_op_count", crate::ops::ft_op_count as *const c_void),
    Proc("ft_op_name", crate::ops::ft_op_name as *const c_void),
    Proc(
        "ft_op_num_overloads",
        crate::ops::ft_op_num_overloads as *const c_void,
    ),
    Proc("ft_op_schema", crate::ops::ft_op_schema as *const c_void),
    Proc("ft_op_flags", crate::ops::ft_op_flags as *const c_void),
    Proc("ft_op_call", crate::ops::ft_op_call as *const c_void),
    Proc("ft_call", crate::ops::ft_call as *const c_void),
    Proc("ft_add", crate::ops::ft_add as *const c_void),
    Proc("ft_sub", crate::ops::ft_sub as *const c_void),
    Proc("ft_mul", crate::ops::ft_mul as *const c_void),
    Proc("ft_div", crate::ops::ft_div as *const c_void),
    Proc("ft_matmul", crate::ops::ft_matmul as *const c_void),
    Proc("ft_mm", crate::ops::ft_mm as *const c_void),
    Proc("ft_neg", crate::ops::ft_neg as *const c_void),
    Proc("ft_exp", crate::ops::ft_exp as *const c_void),
    Proc("ft_log", crate::ops::ft_log as *const c_void),
    Proc("ft_tanh", crate::ops::ft_tanh as *const c_void),
    Proc("ft_sigmoid", crate::ops::ft_sigmoid as *const c_void),
    Proc("ft_relu", crate::ops::ft_relu as *const c_void),
    Proc("ft_sum", crate::ops::ft_sum as *const c_void),
    Proc("ft_mean", crate::ops::ft_mean as *const c_void),
    Proc("ft_reshape", crate::ops::ft_reshape as *const c_void),
    Proc("ft_transpose", crate::ops::ft_transpose as *const c_void),
    Proc("ft_full", crate::ops::ft_full as *const c_void),
    Proc("ft_optim_sgd", crate::optim::ft_optim_sgd as *const c_void),
    Proc(
        "ft_optim_adam",
        crate::optim::ft_optim_adam as *const c_void,
    ),
    Proc(
        "ft_optim_adamw",
        crate::optim::ft_optim_adamw as *const c_void,
    ),
    Proc(
        "ft_optimizer_step",
        crate::optim::ft_optimizer_step as *const c_void,
    ),
    Proc(
        "ft_optimizer_zero_grad",
        crate::optim::ft_optimizer_zero_grad as *const c_void,
    ),
    Proc(
        "ft_optimizer_get_lr",
        crate::optim::ft_optimizer_get_lr as *const c_void,
    ),
    Proc(
        "ft_optimizer_set_lr",
        crate::optim::ft_optimizer_set_lr as *const c_void,
    ),
    Proc(
        "ft_optimizer_free",
        crate::optim::ft_optimizer_free as *const c_void,
    ),
    Proc("ft_lr_step", crate::optim::ft_lr_step as *const c_void),
    Proc(
        "ft_lr_exponential",
        crate::optim::ft_lr_exponential as *const c_void,
    ),
    Proc("ft_lr_cosine", crate::optim::ft_lr_cosine as *const c_void),
    Proc(
        "ft_scheduler_step",
        crate::optim::ft_scheduler_step as *const c_void,
    ),
    Proc(
        "ft_scheduler_get_last_lr",
        crate::optim::ft_scheduler_get_last_lr as *const c_void,
    ),
    Proc(
        "ft_scheduler_free",
        crate::optim::ft_scheduler_free as *const c_void,
    ),
    Proc("ft_set_error", crate::plugin::ft_set_error as *const c_void),
    Proc(
        "ft_library_def",
        crate::plugin::ft_library_def as *const c_void,
    ),
    Proc("ft_get_proc", crate::plugin::ft_get_proc as *const c_void),
    Proc(
        "ft_class_def",
        crate::plugin_class::ft_class_def as *const c_void,
    ),
    Proc(
        "ft_class_def_init",
        crate::plugin_class::ft_class_def_init as *const c_void,
    ),
    Proc(
        "ft_class_def_method",
        crate::plugin_class::ft_class_def_method as *const c_void,
    ),
    Proc(
        "ft_class_def_pickle",
        crate::plugin_class::ft_class_def_pickle as *const c_void,
    ),
    Proc("ft_alloc", crate::plugin_class::ft_alloc as *const c_void),
    Proc(
        "ft_load_library",
        crate::plugin::ft_load_library as *const c_void,
    ),
    Proc(
        "ft_script_module_load",
        crate::script::ft_script_module_load as *const c_void,
    ),
    Proc(
        "ft_script_module_forward",
        crate::script::ft_script_module_forward as *const c_void,
    ),
    Proc(
        "ft_script_module_free",
        crate::script::ft_script_module_free as *const c_void,
    ),
    Proc(
        "ft_state_dict_new",
        crate::state::ft_state_dict_new as *const c_void,
    ),
    Proc(
        "ft_state_dict_free",
        crate::state::ft_state_dict_free as *const c_void,
    ),
    Proc(
        "ft_state_dict_len",
        crate::state::ft_state_dict_len as *const c_void,
    ),
    Proc(
        "ft_state_dict_key",
        crate::state::ft_state_dict_key as *const c_void,
    ),
    Proc(
        "ft_state_dict_get",
        crate::state::ft_state_dict_get as *const c_void,
    ),
    Proc(
        "ft_state_dict_insert",
        crate::state::ft_state_dict_insert as *const c_void,
    ),
    Proc(
        "ft_safetensors_save",
        crate::state::ft_safetensors_save as *const c_void,
    ),
    Proc(
        "ft_safetensors_load",
        crate::state::ft_safetensors_load as *const c_void,
    ),
    Proc(
        "ft_last_error",
        crate::status::ft_last_error as *const c_void,
    ),
    Proc(
        "ft_tensor_from_data",
        crate::tensor::ft_tensor_from_data as *const c_void,
    ),
    Proc(
        "ft_tensor_from_blob",
        crate::tensor::ft_tensor_from_blob as *const c_void,
    ),
    Proc("ft_zeros", crate::tensor::ft_zeros as *const c_void),
    Proc("ft_ones", crate::tensor::ft_ones as *const c_void),
    Proc("ft_randn", crate::tensor::ft_randn as *const c_void),
    Proc("ft_rand", crate::tensor::ft_rand as *const c_void),
    Proc(
        "ft_manual_seed",
        crate::tensor::ft_manual_seed as *const c_void,
    ),
    Proc(
        "ft_tensor_clone",
        crate::tensor::ft_tensor_clone as *const c_void,
    ),
    Proc(
        "ft_tensor_free",
        crate::tensor::ft_tensor_free as *const c_void,
    ),
    Proc(
        "ft_tensor_free_many",
        crate::tensor::ft_tensor_free_many as *const c_void,
    ),
    Proc(
        "ft_tensor_ndim",
        crate::tensor::ft_tensor_ndim as *const c_void,
    ),
    Proc(
        "ft_tensor_shape",
        crate::tensor::ft_tensor_shape as *const c_void,
    ),
    Proc(
        "ft_tensor_stride",
        crate::tensor::ft_tensor_stride as *const c_void,
    ),
    Proc(
        "ft_tensor_dtype",
        crate::tensor::ft_tensor_dtype as *const c_void,
    ),
    Proc(
        "ft_tensor_numel",
        crate::tensor::ft_tensor_numel as *const c_void,
    ),
    Proc(
        "ft_tensor_data_ptr",
        crate::tensor::ft_tensor_data_ptr as *const c_void,
    ),
    Proc(
        "ft_tensor_copy_to",
        crate::tensor::ft_tensor_copy_to as *const c_void,
    ),
    Proc(
        "ft_tensor_item_double",
        crate::tensor::ft_tensor_item_double as *const c_void,
    ),
    Proc(
        "ft_tensor_item_int64",
        crate::tensor::ft_tensor_item_int64 as *const c_void,
    ),
    Proc(
        "ft_tensor_to_string",
        crate::tensor::ft_tensor_to_string as *const c_void,
    ),
    Proc(
        "ft_string_free",
        crate::tensor::ft_string_free as *const c_void,
    ),
    Proc(
        "ft_set_num_threads",
        crate::tensor::ft_set_num_threads as *const c_void,
    ),
    Proc(
        "ft_get_num_threads",
        crate::tensor::ft_get_num_threads as *const c_void,
    ),
];

/// The names in the table (for the header test).
pub fn proc_names() -> Vec<&'static str> {
    PROCS.iter().map(|p| p.0).collect()
}
