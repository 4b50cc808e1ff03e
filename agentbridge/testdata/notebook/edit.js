// Regenerates expected.json: node edit.js. The notebook part of Claude
// Code 2.1.332's NotebookEdit, copied from its linux-x64 binary's JavaScript
// (the insert id fixed to NEWID123); applied to fixture.ipynb, case by case.
const fs=require('fs');
function NUn(e,n,o){let g=o==="insert";if(!n)return g?0:{message:"Cell ID must be specified when not inserting a new cell.",errorCode:7};let h=e.findIndex((y)=>y.id===n);if(h===-1){let y=/^cell-(\d+)$/.exec(n)?.[1];if(y===void 0)return{message:`Cell with ID "${n}" not found in notebook.`,errorCode:8};if(h=parseInt(y,10),!e[h])return{message:`Cell with index ${h} does not exist in notebook.`,errorCode:7}}return g?h+1:h}
function k8o(e){if(!(e.attachments&&typeof e.attachments==='object'))return!1;for(let n in e.attachments)return!0;return!1}
function edit(Ae,{new_source:o,cell_id:g,cell_type:h,edit_mode:y}){let Ke=JSON.parse(Ae.replace(/^\uFEFF/,''));let nt=NUn(Ke.cells,g,y);if(typeof nt!=="number")return "ERR "+nt.message;let ht=g;if(y==="insert")ht="NEWID123";let Nt;if(y==="delete"){let sn=Ke.cells[nt];Ke.cells.splice(nt,1)}else if(y==="insert"){let sn;if(h==="markdown")sn={cell_type:"markdown",id:ht,source:o,metadata:{}};else sn={cell_type:"code",id:ht,source:o,metadata:{},execution_count:null,outputs:[]};Ke.cells.splice(nt,0,sn)}else{let sn=Ke.cells[nt];if(h==="code"&&sn.cell_type!=="code"&&k8o(sn))return "ERR attachments";sn.source=o;if(h)sn.cell_type=h;switch(sn.cell_type){case"code":if(sn.execution_count=null,sn.outputs=[],!k8o(sn))delete sn.attachments;break;case"markdown":case"raw":Reflect.deleteProperty(sn,"execution_count"),Reflect.deleteProperty(sn,"outputs");break}}
return (Ae.startsWith("\uFEFF")?"\uFEFF":"")+JSON.stringify(Ke,null,1)+(Ae.endsWith("\n")?"\n":"")}
const src=fs.readFileSync('fixture.ipynb','utf8');
const cases=[
 {new_source:"print(2)",cell_id:"c1"},
 {new_source:"now code",cell_id:"intro",cell_type:"code"},
 {new_source:"x",cell_id:"cell-3",cell_type:"markdown"},
 {new_source:"first",cell_type:"markdown",edit_mode:"insert"},
 {new_source:"after c1",cell_id:"c1",cell_type:"code",edit_mode:"insert"},
 {new_source:"",cell_id:"pic",edit_mode:"delete"},
 {new_source:"y",cell_id:"pic",cell_type:"code"},
 {new_source:"y",cell_id:"nope"},
 {new_source:"y",cell_id:"cell-9"},
 {new_source:"y"},
];
const out=cases.map(c=>({args:c,out:edit(src,c)}));
fs.writeFileSync('expected.json',JSON.stringify(out));
console.log(out[0].out.slice(0,400));
